"""The dedup stage on its own: ``spark-submit jobs/stages/dedup/__main__.py`` (the run options, one stage)."""

if __name__ == "__main__":
    import sys

    from jobs.cli import main_for_stage

    sys.exit(main_for_stage("dedup"))
