"""The training-resume check: an uninterrupted training against one resumed from its
checkpoint (``step.py``), and the verdict on the two (``verdict.py``); its
``[verify.resume]`` table is read by :mod:`lockkit.config.checks.resume`.
"""
