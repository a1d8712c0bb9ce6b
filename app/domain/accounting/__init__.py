"""The accounting engine: nodes, pods, GPUs and agent reports -> the snapshot."""
