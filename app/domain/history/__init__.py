"""GPU-hours over days: samples of the snapshot, showback rows and who held a GPU when."""
