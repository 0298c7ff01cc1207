"""``jaket embed``'s counted flags take positive integers only: argparse refuses anything else
(exit status 2, naming the flag) before a file is read or written."""

import pytest

from jaket.cli import main


@pytest.mark.parametrize("flag", ["--batch-size", "--text-batch-size", "--max-length"])
@pytest.mark.parametrize("value", ["0", "-3"])
def test_a_count_below_one_is_refused(flag, value, tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["embed", "--model", str(tmp_path / "model"), "--kg", str(tmp_path / "kg"),
              "--out", str(tmp_path / "e.npy"), flag, value])
    err = capsys.readouterr().err
    assert caught.value.code == 2
    assert f"argument {flag}: must be a positive integer, got {value}" in err
    assert not (tmp_path / "e.npy").exists()
