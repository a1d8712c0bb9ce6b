"""The device plugin as deployed: its DaemonSet, its config file and the config each node runs."""
