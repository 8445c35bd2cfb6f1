"""The command line: every command's argument parsing, one module per command group.

    main.py      the top parser (COMMANDS: each command and its flags' builder) and the small commands (engines,
                 tasks, data pull)
    run.py       `run` (its flags are generated from reasoneval.run.options.EvalConfig)
    report.py    `report`
    score.py     `score`
    fleet.py     `sweep`, `watch`
    analysis.py  `compare`, `analyze`, `runs`, `export`

Nothing is imported here: `python -m reasoneval.cli.main` then runs main.py once, as a script.
"""
