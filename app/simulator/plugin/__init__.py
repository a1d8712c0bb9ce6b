"""The NVIDIA device plugin's emulation: what a node advertises, its DaemonSet and pods."""
