"""Throughput, CPU and memory: one stage, every stage at several sizes, or the whole run, with competitors."""
