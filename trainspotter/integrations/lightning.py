"""`TrainspotterCallback` for Lightning (`lightning.pytorch.Trainer`): findings while it
trains.

    trainer = L.Trainer(..., callbacks=[TrainspotterCallback(stop_on="error")])

At the end of each training batch, and after each validation, the metrics the module
logged (`trainer.callback_metrics`, scalar values only) that were logged again since the
last look are fed to a `trainspotter.Monitor` at `trainer.global_step`. "Logged again" is
told by the value object: Lightning keeps the last value of a metric until it is logged
anew, so a validation loss is recorded once per validation, not at every later batch.
Names are normalised like a log's columns (`train_loss` -> `train/loss`, `val_loss` ->
`eval/loss`). Each new finding is one line through the `lightning.pytorch` logger. With
`stop_on`, a finding at or above that severity sets `trainer.should_stop`: Lightning stops
after the current batch (once `min_steps` / `min_epochs` are reached). At the end of
fitting the final analysis (exactly `trainspotter.analyze` on the same points) is written
to `<log_dir>/trainspotter-report.json` and `.html` (`trainer.log_dir`, else
`default_root_dir`) by the global-zero process. The sanity-check validation is skipped.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from trainspotter.integrations._live import CallbackBase, missing_framework
from trainspotter.model import Severity

try:
    from lightning.pytorch import Callback
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise missing_framework(__name__, "lightning", "lightning") from exc

logger = logging.getLogger("lightning.pytorch.trainspotter")


def _say(severity: Severity, line: str) -> None:
    logger.log(logging.WARNING if severity >= Severity.WARNING else logging.INFO, line)


class TrainspotterCallback(CallbackBase, Callback):
    """Run trainspotter on the metrics a LightningModule logs (see the module docstring).

    `config`: a trainspotter Config, the path of a `.trainspotter.yml`, or None for the
    defaults. `stop_on`: stop training at the first finding at or above this severity;
    None only reports. `write_reports`: write the JSON and HTML reports at the end."""

    source_format = "lightning"

    say = staticmethod(_say)
    _seen: dict[str, object]
    """Each metric's value object when last recorded (set when fitting starts)."""

    @staticmethod
    def _folder(trainer: Any) -> Path:
        return Path(trainer.log_dir or trainer.default_root_dir)

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        self.live.name = str(self._folder(trainer))
        max_steps = trainer.max_steps if trainer.max_steps and trainer.max_steps > 0 else None
        self.live.start(max_steps)
        self.analysis = None
        self._seen = {}

    def _look(self, trainer: Any) -> None:
        if not hasattr(self, "_seen"):
            return  # not fitting (a bare `trainer.validate()`): nothing to follow
        fresh: dict[str, object] = {}
        for name, value in trainer.callback_metrics.items():
            if self._seen.get(name) is not value:
                self._seen[name] = value
                fresh[name] = value
        if fresh and self.live.record(int(trainer.global_step), fresh):
            trainer.should_stop = True

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self._look(trainer)

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if not trainer.sanity_checking:
            self._look(trainer)

    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        folder = self._folder(trainer) if trainer.is_global_zero else None
        self.analysis = self.live.finish(folder)


__all__ = ["TrainspotterCallback"]
