"""Unicode ranges of writing systems the stages treat alike."""

# Code-point ranges of scripts written without spaces between words (one character = one token).
UNSEGMENTED_RANGES = [
    (0x0E00, 0x0EFF),    # Thai, Lao
    (0x0F00, 0x0FFF),    # Tibetan
    (0x1000, 0x109F),    # Myanmar
    (0x1780, 0x17FF),    # Khmer
    (0x2E80, 0x2FDF),    # CJK radicals, Kangxi radicals
    (0x3001, 0x30FF),    # CJK symbols and punctuation, Hiragana, Katakana
    (0x3100, 0x312F),    # Bopomofo
    (0x3190, 0x9FFF),    # Kanbun … CJK Extension A, CJK Unified Ideographs
    (0xF900, 0xFAFF),    # CJK compatibility ideographs
    (0xFE30, 0xFE4F),    # CJK compatibility forms
    (0xFF61, 0xFF9F),    # halfwidth CJK punctuation and Katakana
    (0x20000, 0x3134F),  # CJK Extensions B–G
]
