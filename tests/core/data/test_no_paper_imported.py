"""Loading a dataset imports no paper: every dataset's loader, and the taxonomies its records are converted to,
live in the data layer. Each check runs in a fresh interpreter, so that nothing imported by another test hides
an import."""

import json
import subprocess
import sys
import textwrap

from conftest import needs_mirror

# Datasets whose loaders convert annotations through a taxonomy (the ones a paper used to have to register first)
THROUGH_A_TAXONOMY = {"tofueval-meetingbank", "meetingbank-ambiguity", "diasumfact", "faceval"}


def _fresh(code: str) -> dict:
    """Run ``code`` in a new interpreter (the package on the same path); it prints one JSON object."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=600,
                         check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@needs_mirror
def test_every_dataset_here_loads_without_importing_a_paper():
    result = _fresh("""
        import json, sys
        from sumjudge.data import registry

        assert "sumjudge.papers" not in sys.modules
        loaded, absent, papers_after = {}, [], []
        for name in registry.DATASETS:
            if not registry.is_present(name):
                absent.append(name)
                continue
            loaded[name] = len(registry.load(name))
            if any(m == "sumjudge.papers" or m.startswith("sumjudge.papers.") for m in sys.modules):
                papers_after.append(name)
                break  # the first dataset whose loading imported a paper is the one to name
        print(json.dumps({"loaded": loaded, "absent": absent, "papers_after": papers_after}))
    """)
    assert result["papers_after"] == []
    assert THROUGH_A_TAXONOMY <= set(result["loaded"]), result  # the mirror holds these: they were checked
    assert len(result["loaded"]) >= 12 and all(n > 0 for n in result["loaded"].values())


def test_the_error_types_of_your_own_and_aggrefact_files_import_no_paper(tmp_path):
    """The loaders the mirror cannot feed here (AggreFact's error-type files, a file of your own with error types)
    convert their types through the data layer's taxonomy too."""
    p = tmp_path / "FRANK_error_types.csv"
    p.write_text("dataset,origin,id,doc,summ,model_name,cut,error_type,annotated_span\n"
                 "FRANK,cnndm,d0,The mayor opened the bridge.,The mayor closed it.,BART,test,['intrinsic-predicate'],[]\n"
                 "FRANK,cnndm,d1,The mayor opened the bridge.,The mayor opened it.,BART,test,correct,[]\n",
                 encoding="utf-8")
    own = tmp_path / "own.jsonl"
    own.write_text(json.dumps({"document": "A said b.", "summary": "A said c.", "label": 0,
                               "types": "entity error; addition_error"}) + "\n", encoding="utf-8")
    result = _fresh(f"""
        import json, sys
        from sumjudge.data import registry

        aggrefact = registry.load("aggrefact-errors:{tmp_path}")
        own = registry.load("file:{own}?error_types=types")
        print(json.dumps({{"types": [e.error_types for e in aggrefact + own],
                           "papers": sorted(m for m in sys.modules if m.startswith("sumjudge.papers"))}}))
    """)
    assert result["papers"] == []
    assert result["types"] == [["Predicate Error"], [], ["Addition Error", "Entity Error"]]
