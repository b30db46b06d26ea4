"""Judges: what every judge builds on (``base``: the Judgement record, requests, prompt fitting), settings
(``settings``: every method setting checked against its config) and the pieces the papers' judges share (G-Eval's
aspect scoring, rated aspects). The methods are registered in ``sumjudge.run.methods``, by their papers, on the
first lookup."""
