"""GPU Slots: GPU slot accounting for Kubernetes clusters running the NVIDIA device plugin."""

__version__ = "0.1.0"
