"""NVIDIA's DRA driver emulation: its ResourceSlices, claim allocation, the kubelet's side."""
