"""What the tests share: the loopback replicas of the indexes (the PyTorch index as
pytorch/test-infra's manage_v2.py renders it, a PEP 503 default index), fake torch builds
with torch's real Requires-Dist, servers that stall, and the helpers several stages use."""
