"""The simulated cluster as a whole: scenarios, workload, agents and the /_sim/ routes."""
