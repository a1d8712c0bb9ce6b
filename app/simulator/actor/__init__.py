"""The simulator's nodes, device plugin, DRA driver and agents, acting on any API server.

Where `SimulatedCluster` serves its own API, the actor is a client (like kwok): it
registers the scenario's Nodes on a real kube-apiserver, plays each node's kubelet (pod
status, the plugin's advertised resources, force-deleting what the kubelet would have
stopped), publishes the DRA driver's ResourceSlices and sends agent reports with bound
ServiceAccount tokens. The real scheduler, controllers and DRA allocator do the rest.
"""
