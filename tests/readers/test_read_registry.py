"""Format detection: content decides, the specific formats beat the generic ones."""

from __future__ import annotations

import pytest
from readers_support import MakeFile

from trainspotter.readers import READERS, ReadOptions, detect_format

CASES = [
    ("trainer_state.json", '{\n  "epoch": 1.0,\n  "log_history": []\n}', "hf"),
    ("x.json", '{"global_step": 1, "log_history": [{"loss": 1, "step": 1}]}', "hf"),
    ("metrics.csv", "epoch,step,train_loss\n0,1,0.5\n", "lightning"),
    ("anything.txt", "train_loss,step,epoch\r\n0.5,49,0\r\n", "lightning"),
    ("metrics.csv", "step,loss\n1,0.5\n", "lightning"),
    ("export.csv", "_step,_runtime,loss\n0,1,0.5\n", "wandb"),
    ("export.csv", '"Step","r - loss","r - loss__MIN","r - loss__MAX"\n"1","1","1","1"\n', "wandb"),
    ("log.jsonl", '{"step": 1, "loss": 0.5}\n', "jsonl"),
    ("log.txt", '{"iter": 1, "loss": 0.5}\n', "jsonl"),
    ("training.log", "epoch,loss\n0,0.5\n", "csv"),
    ("log.csv", "loss\n0.5\n0.4\n", "csv"),
]


@pytest.mark.parametrize(("name", "content", "expected"), CASES)
def test_detect(make_file: MakeFile, name: str, content: str, expected: str) -> None:
    path = make_file(name, content)
    reader, target = detect_format(path, str(path))
    assert reader.name == expected
    assert target == path
    assert READERS[expected].read(path, ReadOptions()).source_format == expected
