"""Will it fit? Where a pod could run now, judged from the published snapshot (issue 45).

`manifest` reads the body a user sends (a Pod, or a workload's pod template) into a `PodAsk`
with the product's own request reader; `check` answers, per GPU node, whether the scheduler
could bind it now and the plugin (or DRA driver) would then admit it, with every "no" as a
code and params the web layer words; `placement` names the GPUs the plugin would most likely
hand out. Pure: no I/O, no clock.
"""
