"""Where each benchmark file comes from, and how a loader finds it.

Resolution order for a file: ``data/raw/<rel>`` (downloaded earlier), then a mirror folder
(``SUMJUDGE_DATA_MIRROR``, else ``../shared/data`` when it exists), then a download from the
pinned origin when ``fetch`` is asked for. Offline and missing, the error says what is missing
and where it comes from.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from sumjudge.environment import read
from sumjudge.paths import project_root, raw_dir


class DataMissingError(FileNotFoundError):
    pass


class DataFormatError(ValueError):
    """Bad input: names the file, the row and the field."""

    def __init__(self, file: str | Path, row: int | str | None, field: str | None, problem: str):
        self.file, self.row, self.field = str(file), row, field
        where = f"{Path(file).name}"
        if row is not None:
            where += f", row {row}"
        if field:
            where += f", field {field!r}"
        super().__init__(f"{where}: {problem}")


@dataclass(frozen=True)
class SourceFile:
    rel: str  # path under data/raw and under the mirror
    url: str  # pinned origin
    sha256: str | None = None


_GH = "https://raw.githubusercontent.com"
_TOFU = f"{_GH}/amazon-science/tofueval/ade0f385448e0ad25936091ffbb3df73fa62aeee"
_AMBIGUITY_REPO = f"{_GH}/amazon-science/madisse/ddb82764caae5172f09058dcb281671789d63e29"
_UNIEVAL = f"{_GH}/maszhongming/UniEval/d33e7b6cfebe97b2bafe435adbd818230d5a416a/reproduce/data"
_MEETING_ERRORS = f"{_GH}/FKIRSTE/emnlp2024-Meeting-Sum-Metrics/22bec9db25ba2afab152645af75282157c6fc9e7/data/annotated%20datasets"

FILES: dict[str, SourceFile] = {f.rel: f for f in [
    SourceFile("tofueval/factual_consistency/meetingbank_factual_eval_test.csv",
               f"{_TOFU}/factual_consistency/meetingbank_factual_eval_test.csv",
               "9c7f3e03a01c3d077e891f6b7f5b75af9cf517d2b395f6ddf159b5ac9e84746d"),
    SourceFile("tofueval/factual_consistency/meetingbank_factual_eval_dev.csv",
               f"{_TOFU}/factual_consistency/meetingbank_factual_eval_dev.csv",
               "f5923a9bf98503bee3eccc44cf4a9c31a6773d2a0a5c8c434f5670f5f0703f1d"),
    SourceFile("tofueval/factual_consistency/mediasum_factual_eval_test.csv",
               f"{_TOFU}/factual_consistency/mediasum_factual_eval_test.csv",
               "ee76f057edb865b2bc206bd371ebe5bc3ddd959d152e06cada95d09efe9a588e"),
    SourceFile("tofueval/factual_consistency/mediasum_factual_eval_dev.csv",
               f"{_TOFU}/factual_consistency/mediasum_factual_eval_dev.csv",
               "6bbd3140eb64dfe4dd9f889f9e0b3817634ac2acdb5968e3634267f3b4aca296"),
    SourceFile("tofueval/document_ids_dev_test_split.json", f"{_TOFU}/document_ids_dev_test_split.json",
               "24c6cef4315e32bc6db7f27589b05a3cb7b67f09cf2d10d3cf157cb204a7a334"),
    SourceFile("madisse/MeetingBank_ambiguity_annotated.json", f"{_AMBIGUITY_REPO}/data/MeetingBank_ambiguity_annotated.json",
               "978f5923c8c0088d0f016465f41fe76771e8c2d75f9ca15223d5382805fe658f"),
    SourceFile("madisse/sample_data.json", f"{_AMBIGUITY_REPO}/data/sample_data.json",
               "71e4583112711f2711acc6a6b7f2470304c0c3bc96fe562688566df4a94fc32f"),
    SourceFile("unieval/qags_cnndm.json", f"{_UNIEVAL}/fact/qags_cnndm.json",
               "de8d216db28b0ce89edf761bf639d1917adca6704c29d807a1e99a0aaaa4b2c5"),
    SourceFile("unieval/qags_xsum.json", f"{_UNIEVAL}/fact/qags_xsum.json",
               "1403b4d1abed008d0303f883d35d71c88597c49d5a6e4ef2e1d2d22a283b49df"),
    SourceFile("unieval/topical_chat.json", f"{_UNIEVAL}/dialogue/topical_chat.json",
               "f6361daa6fe162f636d2071a60322a784acd770be0bf3a6920ac949d751b978a"),
    SourceFile("summeval/bartscore_SUM_SummEval_data.pkl",
               f"{_GH}/neulab/BARTScore/248f511cb34ae3753fc81f7d7a945de5bfe33458/SUM/SummEval/data.pkl",
               "008f1639a3352f0248cac88b74ff431c27287a027a888902ef425a26005f0acf"),
    SourceFile("diasumfact/annotations.json",
               f"{_GH}/731935354/Dia-Sum-Fact/fdec07df7ed239360c1f7d4b69f67c5289a335d0/data/annotations.json",
               "e4b63635483d9e9c6c9474940ad16d09a1f8d0b478ab165dc4380846414eb6b0"),
    SourceFile("faceval/FacEval_human_result.csv",
               f"{_GH}/BinWang28/FacEval/548f7591836b5cb096462e07051927eaa6107eba/human_result/FacEval_human_result.csv",
               "812029b3af4e683937163a4b5b36145aae1ff642b1f3ddc843b6a2d0df1908a3"),
    *[SourceFile(f"govreport/{f}", f"{_GH}/huankoh/How-Far-are-We-from-Robust-Long-Abstractive-Summarization/{c}/{f}")
      for f, c in (("robust_long_abstractive_human_annotation_dataset.jsonl", "2ed5f8dfb2a93aa747d6403c13c344ce5c5b25c8"),
                   ("annotation_data.jsonl", "2ac7b955529a9e88033cea3fa38751100f0a29a5"))],
    *[SourceFile(f"meeting_errors/{m}_summaries.csv", f"{_MEETING_ERRORS}/{m}_summaries.csv")
      for m in ("LED", "DialogLED", "PEGASUSX", "GPT35", "Zephyr")],
]}


# QMSum (github.com/Yale-LILY/QMSum @ 83d7768): the 31 test meetings the meeting-errors summaries were written
# for (every one of its 133 transcripts is the start of one of these), read to restore the full transcripts.
_QMSUM = f"{_GH}/Yale-LILY/QMSum/83d7768c1f2b4dfeb091385d3dc7e239b8e5bb7e/data/ALL"
QMSUM_TEST_MEETINGS = {
    "Bed003": "959b0a710628f786f64c35f1462717f234b03ba34f2e170d3bb13be72f3321f8",
    "Bed008": "d05c8b6dbc35244a277147f85778bb02b7ad7eae0f03700ac68d084d296fc84a",
    "Bed016": "c8f8cb9ad047361dd3f364e28aa44d150d2b9c730434ef88c0dece6ce34a9756",
    "Bmr006": "0b1fb051ad319a0ff006970b86336425fc2ed987a3616bd07cf9a48c53bbfa69",
    "Bmr014": "d0e8d99b8a2568beaaedae741c4ac5453a6bcb22f23386e50659690dcc916bd6",
    "Bmr023": "5fa1ac45bd19972a64f21d7cba3ef1afb73ad7b38c26a5c1ff03139bf0971cb5",
    "Bro004": "f8a8c92c0574f4d4ed4596b68d94ca236f2ae09bccb283ead925ef3512f64890",
    "Bro019": "b2f4aee0ced969ee2c3a9d4dc71d24dce227e9513aca8acc539ae3cfda5a2cec",
    "Bro027": "ba636d2f05985723663e72aa6c8c85bf9f1e8e50fa03790146dbbebc2d1419af",
    "ES2004a": "911e56db0d8482f1e730bae0a8fcf0ab0095c94abb000ba0516e975fa6e48b31",
    "ES2004b": "5ed3c79e6784827652a2cdfaf2922c377aa386d8501b4a2039e51fb00a4d294d",
    "ES2004c": "31815196407111dba01f8b8cbfa31cd07fb8a682e4005bae7846893ab93a6778",
    "ES2004d": "d3f7235ffcf577909726ebbd95e87b1f5bef62a7a984911abf9d9cb0825fd752",
    "ES2011a": "1e2ae7b9d3a7e9cf2e6c1dcd62de5c4f4050d7366c5e6a7605bfaf5d790ff35c",
    "ES2011b": "aa9c1ac75b1092e1bdb22576268831b0321147375de563be51cace51a67636f1",
    "ES2011c": "0f76f60f6eeae152da331d498d384dbaf9b9b3e2d5aa705abb0ddf4ab742328a",
    "ES2011d": "a5882a985364529b7c82836f0368af46d738c7bf5a830485614d61c077525519",
    "IS1003a": "94241cde8ed5e0eda79881f1df343baf331119b540b846436d1d5a16ebf0d4ff",
    "IS1003b": "1aa2ac4526602ec1ffd25e2624dd5bf72c05cd2dc526ca3f756fb2b6cee8cc0c",
    "IS1003c": "1a3c18ed141f731763614eb93b616daef627516c9584cca5c4e18acdc494e558",
    "IS1003d": "c99895f2a1fee6f5602329316047e7dc7448891f697606d65313ceb83570a80d",
    "TS3004a": "dcd543b2ebe895069a33cd3b1e0bf3e7072010bc32e34c31798d43a9a4616c10",
    "TS3004b": "5c1e39e5e52154f41e54280ec27fde5dbe945d89d66d4e2ef14d6f6a4712d561",
    "TS3004c": "4000d632f2d2956956c5ba8e5448bcc829781b33e4ab3f89f1db29dc524a384c",
    "TS3004d": "2fda8b12aa354453cd71345549079787a34c5eb3a1e617cbddcc3cee5c167113",
    "TS3011a": "d9ec9c44f157ee9f3d3960394e4046c5014cfde8e5ceb1a1ad64ab8ba3c870af",
    "TS3011b": "a9893799ef415b28b73d74412375774543003f6778c3c169835a7c8517ddc7c5",
    "TS3011c": "c08cb7f63bbcae707ce9a47e6f0534b68e6c889228e703f108024ce56e90c00c",
    "TS3011d": "b555b5693e29d34336d75d3afb7eecaa0c155502bc8b1071751ac34d16bc6403",
    "covid_4": "f0cff5da0694b867630dd180263b09f44a76b49088f96e9660a95bfb6ba0ed1b",
    "covid_9": "270347ed6d3fab99e4981a04997244c4b617c1ba26cbbfe12a0b34998d7ea8de",
}
# The meeting-summary error types' definitions (github.com/FKIRSTE/coling2025-MESA @ adb7e6f, criteria/*.json)
_CRITERIA_REPO = f"{_GH}/FKIRSTE/coling2025-MESA/adb7e6f281d153b75868a183f7ed1ac02d2e6664/criteria"
CRITERIA_FILES = {
    "coreference": "983ff2e8681db839136d26b8a0a6077667822aa93b6ecb490742f3c5f58ca66c",
    "hallucination": "095f390baccdf628b65b28364c9f743ae27710e6743221defb3852a06c0e3715",
    "incoherence": "9dead25f5b87b4061bfc12b669b2bb6a57e310e51d3017711c895f6025bc9b89",
    "irrelevance": "d93e0a56fb99bf70572dd58ad471a5e7adeea6a92a39eb55fb1ba9af3451f9f5",
    "language": "f29e7ba64db58bc030b2b27b87083a5a10b4a539c4609c36d59d03a98e855a1f",
    "omission": "2e1147ee34ece2c573964affb41df480cfbfad3773857e659bd520fecd6b6738",
    "repetition": "9f7259d9b1e849ba3f1b75032fe7b37cb8bac9bdf014632eb276c123b2cd9dd6",
    "structure": "38703a18c651f195e57371d0d923c677c657e3f4408522277854d36a1a78c17d",
}
FILES.update({f.rel: f for f in [
    *[SourceFile(f"qmsum/ALL/test/{n}.json", f"{_QMSUM}/test/{n}.json", h) for n, h in QMSUM_TEST_MEETINGS.items()],
    *[SourceFile(f"mesa/criteria/{n}.json", f"{_CRITERIA_REPO}/{n}.json", h) for n, h in CRITERIA_FILES.items()],
]})
# QMSum Mistake with Likert impacts (Kirstein et al. 2025), as the authors' code reads it; not obtainable here, so its sha256
# is not pinned (the download is recorded as it comes)
FILES["mesa/MistekQMSum.csv"] = SourceFile(
    "mesa/MistekQMSum.csv",
    f"{_GH}/FKIRSTE/coling2025-MESA/adb7e6f281d153b75868a183f7ed1ac02d2e6664/HumanJudgment/MistekQMSum.csv")
# AggreFact's error-type files (github.com/Liyan06/AggreFact @ f0654b2, data/error_type_mapping). The repository has
# no license file: its data is downloaded by each user and never mirrored or committed. FRANK's and XSumFaith's files
# are pinned by path only (their sha256 could not be computed here).
_AGGREFACT = f"{_GH}/Liyan06/AggreFact/f0654b245232cd724d5caa5db4950abfb12d795e/data/error_type_mapping"
AGGREFACT_ERROR_FILES = {"CLIFF": "f173a9fd190922280e40fa588215bd469d872e3d4ee17b5cc2b84da9ecca4bdc",
                         "Goyal21": "52b2959553409178cfd12f9fa02666775e1690788379b9ee9dadf7df8ab5b7a5",
                         "FRANK": None, "xsumfaith": None}
FILES.update({f"aggrefact/error_type_mapping/{n}_error_types.csv": SourceFile(
    f"aggrefact/error_type_mapping/{n}_error_types.csv", f"{_AGGREFACT}/{n}_error_types.csv", h)
    for n, h in AGGREFACT_ERROR_FILES.items()})
# AggreFact-FtSota (same repository and commit; its size kept its sha256 from being computed here)
FILES["aggrefact/aggre_fact_sota.csv"] = SourceFile(
    "aggrefact/aggre_fact_sota.csv", f"{_GH}/Liyan06/AggreFact/f0654b245232cd724d5caa5db4950abfb12d795e/data/"
    "aggre_fact_sota.csv", None)
# The LLM-AggreFact leaderboard's data file (every model's BAcc per dataset), as its site's source holds it: a copy of
# the site's repository, at the commit that last changed the file ("update leaderboard", 2024-10-22)
FILES["leaderboards/llm-aggrefact-data.tsx"] = SourceFile(
    "leaderboards/llm-aggrefact-data.tsx",
    f"{_GH}/rin2401/llm-aggrefact/a42c9d2808db8f6dc6162e25990c29949dc1b020/src/app/data.tsx",
    "157119283869c4469326561f4f54f7caf9bf087814964c7e7da19c8a34938080")
# Files that belong to no dataset of their own, fetched by name (`sumjudge data fetch meeting-error-criteria`)
RESOURCES: dict[str, tuple[str, ...]] = {
    "aggrefact-errors": tuple(f"aggrefact/error_type_mapping/{n}_error_types.csv" for n in AGGREFACT_ERROR_FILES),
    "llm-aggrefact-leaderboard": ("leaderboards/llm-aggrefact-data.tsx",),
    "meeting-error-criteria": tuple(f"mesa/criteria/{n}.json" for n in CRITERIA_FILES),
    "qmsum": tuple(f"qmsum/ALL/test/{n}.json" for n in QMSUM_TEST_MEETINGS),
}


def mirror_dir() -> Path | None:
    env = read("SUMJUDGE_DATA_MIRROR")
    if env:
        return Path(env)
    cand = project_root().parent / "shared" / "data"
    return cand.resolve() if cand.is_dir() else None


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def resolve(rel: str) -> Path:
    """Local path of a benchmark file: data/raw, then the mirror; else a DataMissingError naming the origin."""
    raw = raw_dir() / rel
    if raw.exists():
        return raw
    m = mirror_dir()
    if m is not None and (m / rel).exists():
        return m / rel
    src = FILES.get(rel)
    origin = src.url if src else "(no pinned origin: see the dataset's documentation)"
    raise DataMissingError(f"{rel} is not in {raw_dir()} nor in a mirror folder "
                           f"({m or 'none found; set SUMJUDGE_DATA_MIRROR'}). Get it with `sumjudge data fetch` "
                           f"or download {origin} to {raw}")


def fetch(rel: str, *, force: bool = False, progress: bool = True) -> Path:
    """Download one pinned file into data/raw (verifying sha256 where pinned). Mirror copies are not duplicated."""
    src = FILES.get(rel)
    if src is None:
        raise KeyError(f"no pinned origin for {rel}")
    dest = raw_dir() / rel
    if dest.exists() and not force:
        return dest
    try:
        return resolve(rel) if not force else _download(src, dest, progress)
    except DataMissingError:
        return _download(src, dest, progress)


def _download(src: SourceFile, dest: Path, progress: bool) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, suffix=".part")
    os.close(fd)
    try:
        with urllib.request.urlopen(src.url, timeout=60) as resp, open(tmp, "wb") as out:
            total = int(resp.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc=dest.name, disable=not progress) as bar:
                for block in iter(lambda: resp.read(1 << 16), b""):
                    out.write(block)
                    bar.update(len(block))
        if src.sha256 and sha256_of(Path(tmp)) != src.sha256:
            raise DataFormatError(dest, None, None, f"sha256 mismatch for download from {src.url}")
        shutil.move(tmp, dest)
    except OSError as e:
        raise DataMissingError(f"could not download {src.url}: {e}") from e
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return dest


def hf_dataset_commit(repo: str, revision: str | None = None) -> str | None:
    """The commit a Hugging Face dataset ``revision`` (a branch, tag or commit; None = main) points to now,
    or None when the Hub cannot be asked (offline)."""
    try:
        from huggingface_hub import HfApi

        return HfApi().dataset_info(repo, revision=revision, timeout=20).sha
    except Exception:  # offline, no access: the caller records the revision it asked for
        return None


def provenance_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".source.json")


def write_provenance(dest: Path, repo: str, requested: str | None, commit: str | None) -> None:
    """Beside a file built from a Hugging Face dataset: which repository and commit it came from."""

    provenance_path(dest).write_text(json.dumps({"repo": repo, "requested_revision": requested or "main",
                                                 "commit": commit}, indent=2), encoding="utf-8")


def read_provenance(dest: Path | None) -> dict | None:
    p = provenance_path(dest) if dest else None
    return json.loads(p.read_text(encoding="utf-8")) if p and p.exists() else None
