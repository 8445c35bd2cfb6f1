"""`reasoneval view`: a results folder in the browser (docs/reporting.md, "reasoneval view").

    folder.py   the run directories under the folder, each run's status, cached per file change; paths it may serve
    live.py     a running run's journal read as it grows (done of wanted, tokens/s, ETA), its interim figures
    pages.py    the pages (every run, one run, a training run's curves, two checkpoints compared) and their JSON
    server.py   the aiohttp server: loopback or a token, read-only, CSP with a nonce

A layer of its own above `fleet`, below `cli`: it reads with `results`, `analysis` and `report` and writes nothing.
"""
