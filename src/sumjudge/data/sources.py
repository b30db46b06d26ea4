"""Where each benchmark file comes from, and how a loader finds it.

Resolution order for a file: ``data/raw/<rel>`` (downloaded earlier), then a mirror folder
(``SUMJUDGE_DATA_MIRROR``, else ``../shared/data`` when it exists), then a download from the
pinned origin when ``fetch`` is asked for. Offline and missing, the error says what is missing
and where it comes from.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ..paths import project_root, raw_dir


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
_MADISSE = f"{_GH}/amazon-science/madisse/ddb82764caae5172f09058dcb281671789d63e29"
_UNIEVAL = f"{_GH}/maszhongming/UniEval/d33e7b6cfebe97b2bafe435adbd818230d5a416a/reproduce/data"
_MESA = f"{_GH}/FKIRSTE/emnlp2024-Meeting-Sum-Metrics/22bec9db25ba2afab152645af75282157c6fc9e7/data/annotated%20datasets"

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
    SourceFile("madisse/MeetingBank_ambiguity_annotated.json", f"{_MADISSE}/data/MeetingBank_ambiguity_annotated.json",
               "978f5923c8c0088d0f016465f41fe76771e8c2d75f9ca15223d5382805fe658f"),
    SourceFile("madisse/sample_data.json", f"{_MADISSE}/data/sample_data.json",
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
    *[SourceFile(f"meeting_errors/{m}_summaries.csv", f"{_MESA}/{m}_summaries.csv")
      for m in ("LED", "DialogLED", "PEGASUSX", "GPT35", "Zephyr")],
]}


def mirror_dir() -> Path | None:
    env = os.environ.get("SUMJUDGE_DATA_MIRROR")
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
    from tqdm.auto import tqdm

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
    import json

    provenance_path(dest).write_text(json.dumps({"repo": repo, "requested_revision": requested or "main",
                                                 "commit": commit}, indent=2), encoding="utf-8")


def read_provenance(dest: Path | None) -> dict | None:
    import json

    p = provenance_path(dest) if dest else None
    return json.loads(p.read_text(encoding="utf-8")) if p and p.exists() else None
