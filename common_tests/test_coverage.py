"""The op-coverage table the docs show: it lists every public name of every stage, and it
reads the suite correctly (a name counts as compared only inside a test that uses the
oracle)."""
import textwrap

from stagegrad import coverage


def test_reads_only_tests_that_use_the_oracle(tmp_path):
    (tmp_path / "test_a.py").write_text(textwrap.dedent('''
        CASES = {"from_table": 1}

        def test_against_torch():
            torch = need_torch()
            x.checked_method()
            y = a @ b
            assert CASES

        def test_alone():
            x.unchecked_method()

        def helper():
            torch.used_outside_a_test()
    '''))
    found = coverage.compared_names("PyTorch", tests=tmp_path)
    assert {"checked_method", "matmul", "from_table"} <= found
    assert not {"unchecked_method", "used_outside_a_test"} & found
    assert coverage.compared_names("NumPy", tests=tmp_path) == set()


def test_lists_every_public_name_of_each_stage(sg):
    tables = coverage.table()
    functional = {row[0]: row for row in tables["sg.nn.functional"]}
    expected = set(sg.nn.functional.__all__)
    assert expected <= functional.keys()
    assert all(functional[n][1][sg.__name__] for n in expected)
    assert functional["cross_entropy"][3]["PyTorch"]  # compared in test_functional.py
    tensor = {row[0] for row in tables["Tensor"]}
    assert {n for n in dir(sg.Tensor) if not n.startswith("_")} <= tensor
    text = coverage.markdown(tables)
    assert "| `cross_entropy` |" in text and "## `Tensor`" in text
    # each known difference from PyTorch names a public name, and the table says it
    for (title, name), note in coverage.DIFFERENCES.items():
        assert name in {row[0] for row in tables[title]}, (title, name)
        assert f"| `{name}` (differs, below) |" in text and f"- `{name}` differs from PyTorch: {note}" in text
