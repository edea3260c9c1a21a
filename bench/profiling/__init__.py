"""Where a run's time and memory go (per step, per phase, per thread, per process), and a run's outputs as a digest."""
