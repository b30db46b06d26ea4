"""The lab on LLM judges (``lab``, notebook 02), its answer key (``answer_key``) and a class on one server
(``server``, ``answer_cache``)."""
