"""Refinement: every behaviour of one variant, mapped, is one of another's
(refine.py interpreted, refine_fast.py on the compiled kernel); the
mappings themselves are modelcheck/refinement.py's."""
