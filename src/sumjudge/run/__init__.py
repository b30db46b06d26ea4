"""Runs: a method over a dataset on one engine (``runs``), the folder it runs in (``folder``), its metrics
(``metrics``), the methods' registry (``methods``), the flags a command line gives a run (``flags``) and which server
answered its calls (``serving``)."""
