"""The training-resume check: ``[verify.resume]`` (``config.py``), an uninterrupted training
against one resumed from its checkpoint (``step.py``), and the verdict on the two
(``verdict.py``).
"""
