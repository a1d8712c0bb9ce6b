"""A simulated node as every emulation sees it: its GPUs, its kubelet's pod status, affinity."""
