"""The embedding check, the application check's specialised form for an embedding model:
the host-side verdict on what ``[verify.embedding]`` declares (``verdict.py``).
"""
