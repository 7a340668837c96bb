"""Callbacks that run trainspotter inside a training framework's loop.

- `trainspotter.integrations.transformers.TrainspotterCallback` (`transformers.Trainer`)
- `trainspotter.integrations.lightning.TrainspotterCallback` (`lightning.pytorch.Trainer`)

Neither framework is a dependency of trainspotter: each module imports its framework and
says how to install it when it is missing. The shared part (a `Monitor`, the stop rule,
the log lines and the report files) is `_live.LiveCheck`.
"""
