"""corpusmill: web crawls → LLM pre-training data on Spark, with a MindSpore scoring sidecar."""
from setuptools import find_packages, setup

setup(
    name="corpusmill",
    version="0.1.0",
    description="WARC → filtered, PII-scrubbed, deduplicated, scored, packed MindRecord training data on Spark",
    python_requires=">=3.9",
    packages=find_packages(include=["jobs", "jobs.*", "udfs", "udfs.*", "scoring_service", "scoring_service.*"]),
    include_package_data=True,
    package_data={"scoring_service": ["models/**/*"]},
    install_requires=[
        "pyspark>=3.5,<5",
        "pandas>=2.0,<3",
        "pyarrow>=14",
        "numpy>=1.24,<3",
        "pyyaml>=6,<7",
        "warcio>=1.7,<2",
        "resiliparse>=0.14,<3",
        "trafilatura>=1.12,<3",
        "mindspore>=2.3,<3",
    ],
    extras_require={
        "dev": ["pytest>=7"],
    },
    entry_points={"console_scripts": ["corpusmill=jobs.cli:main"]},
)
