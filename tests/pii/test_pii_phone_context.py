"""Phone numbers with no phone word before them: inside postal-address blocks, in requests whose
only context is a verb of reaching someone, and international numbers in unusual groupings. Each
kind with the look-alikes that must stay: postcodes beside phones, order, account and customer
numbers, years and amounts after a town or a country."""
import pytest

from udfs.pii.scrub import PiiConfig, PiiScrubber


@pytest.fixture(scope="module")
def scrubber():
    return PiiScrubber(PiiConfig())


def phones(scrubber, text):
    return [text[f.start:f.end] for f in scrubber.findings(text) if f.entity == "PHONE"]


# Local shapes that are as often counts and codes ("12 345 678", "123 4567", a bare 10-digit run)
# count after the end of an address or beside a label, each signal on its own.
ADDRESS_BLOCKS = [
    ("4 Mill Lane, York YO1 7HH 77 333 156", "77 333 156"),                        # a UK postcode
    ("Lindenweg 12, 89073 Ulm, 36 787624", "36 787624"),                           # postcode, town
    ("Storgatan 4, Lund 211 20, 6163955774", "6163955774"),                        # town, postcode
    ("5 rue de Lyon, Paris, France 215 3661", "215 3661"),                         # a country
    ("12 High Street\nLeeds LS1 4AB\n42-66-94-85", "42-66-94-85"),               # on the next line
    ("Leeds United Kingdom LS1 4AB 0113 496 0123-Office", "0113 496 0123"),     # a label glued on
    ("Anna Berg 88-11-46-86-Thuis", "88-11-46-86"),                               # the label alone
    ("Anna Berg, 532 8841 (Home)", "532 8841"),
    ("Desk: 532 8841", "532 8841"),
    ("Oxford, MS 38655-4109 662-915-7211", "662-915-7211"),                    # not the ZIP+4
    ("Rua Augusta 10, 01310-100 São Paulo, 0376 216 8703", "0376 216 8703"),   # not the CEP
]


ADDRESS_LOOK_ALIKES = [
    "4 Mill Lane, York YO1 7HH",
    "Av. Paulista 900, 01310-100 São Paulo",
    "Population of London 1851 2 362 236",                         # a year is no postcode
    "Paris 75008, France, 2 145 906 habitants",                    # an amount
    "Germany 82 000 000 Einwohner",
    "5 rue de Lyon, Paris, France. Registered number 54 790 222.",
    "The office 12 345 678 was closed",                            # a label needs its colon or bracket
]


# Verbs of calling, answering, texting and messaging, before or after the number, and the number
# on someone's account, in the recognizer's languages.
REACHING = [
    ("Nobody answers at 12 345 678 after five.", "12 345 678"),
    ("Can you message me on 12-34-56-78 instead?", "12-34-56-78"),
    ("I tried ringing 12 345678 twice today.", "12 345678"),
    ("Why is 4155550132 no longer linked to my account?", "4155550132"),
    ("72 411 937 keeps texting me at night", "72 411 937"),
    ("Bitte rufen Sie mich unter 123 4567 zurück.", "123 4567"),
    ("Warum geht unter 28-13-61-88 niemand ran?", "28-13-61-88"),
    ("Niemand neemt op bij 95 506 574.", "95 506 574"),
    ("Ho chiamato il 51 729344 ma nessuno risponde.", "51 729344"),
    ("Nadie contesta en el 3479793228.", "3479793228"),
    ("麻烦回电 63-11-00-44，谢谢。", "63-11-00-44"),
    ("2827496251に連絡してください。", "2827496251"),
    ("Client services: 0800 123 4567", "0800 123 4567"),      # "client number" vetoes, "client" does not
]


REACHING_LOOK_ALIKES = [
    "I registered order 4155550132 yesterday.",
    "Your order 12 345 678 was registered on 12.03.2024.",
    "My account number is 12 345 678, please refund it.",
    "Customer number 4155550132 was charged twice.",
    "Kundennummer 12 345 678, Rechnung vom 03.04.2024.",
    "Votre numéro client 12345678 figure sur la facture.",
    "4155550132 is my order number and nobody is answering.",     # the nearer word after wins
    "<Forwarded from 21870000>Hi - this is your Mailbox Messaging SMS",  # a verb in another sentence
    "The answer is 12 345 678.",
    "Call volume rose to 20 000 000 this year.",                   # a round count
]


@pytest.mark.parametrize("text,value", ADDRESS_BLOCKS + REACHING)
def test_numbers_closing_an_address_beside_a_label_or_someone_is_reached_on_are_phones(scrubber, text, value):
    assert phones(scrubber, text) == [value]


@pytest.mark.parametrize("text", ADDRESS_LOOK_ALIKES + REACHING_LOOK_ALIKES)
def test_look_alikes_of_those_stay(scrubber, text):
    assert phones(scrubber, text) == []


# A country code followed by any grouping libphonenumber finds possible for that country.
INTERNATIONAL = [
    "+447911 123 456", "(+41) 44 632 18 07", "+41 (0)44 632 18 07", "+41 (0) 79 12 34 567",
    "+49 30 123 456 7890", "+91 98 765 432 10", "(+49) 15 13 67 99 389", "+33 612 345 678",
]


@pytest.mark.parametrize("value", INTERNATIONAL)
def test_international_numbers_in_any_possible_grouping(scrubber, value):
    assert phones(scrubber, f"Her number in Zurich is {value}, after six.") == [value]
    assert phones(scrubber, f"Zurich {value}") == [value]


@pytest.mark.parametrize("text", ["+44 79 111 234 5678", "rose (+12) 2019-2020", "(+7) 12 345"])
def test_international_look_alikes_stay(scrubber, text):
    assert phones(scrubber, text) == []


def test_a_word_the_context_window_cuts_is_not_read(scrubber):
    text = "Flat " + "x" * 59 + " (029) 2018 0855"        # the 64-character window begins at "lat"
    assert phones(scrubber, text) == ["(029) 2018 0855"]
