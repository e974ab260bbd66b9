"""Is a composable_kernel tree the commit fa_ck pins? Checks the CK files fa_ck's build reads against
tools/ck_pin.sha256 (hashes only, no CK source), before anything is generated or compiled.

    python tools/ck_pin.py [CK_TREE]            # verify (default: what tools/ck_compile_check.py would use)
    python tools/ck_pin.py --write CK_TREE      # rewrite the manifest from a tree at the pinned commit
"""
from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "tools" / "ck_pin.sha256"
CK_COMMIT = "e31a7a4f29b371c32ea9daf9211b6ae1fed2fa40"
FMHA = "example/ck_tile/01_fmha"


class CKPinMismatch(RuntimeError):
    pass


def used_files(ck: Path) -> list[str]:
    """What the build reads: CK's tile headers, and the FMHA example's codegen and headers."""
    files = [p for p in (ck / "include" / "ck_tile").rglob("*") if p.is_file()]
    fmha = ck / FMHA
    files += [fmha / "generate.py", *fmha.glob("*.hpp"), *(fmha / "codegen").rglob("*.py")]
    return sorted(p.relative_to(ck).as_posix() for p in files if "__pycache__" not in p.parts)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_manifest(path: Path = MANIFEST) -> dict[str, str]:
    """{relative path: sha256} from lines `<sha256>  <path>` (sha256sum's format); # lines are comments."""
    entries = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            digest, rel = line.split(maxsplit=1)
            entries[rel.strip()] = digest
    return entries


def write_manifest(ck: Path, path: Path = MANIFEST) -> int:
    files = used_files(ck)
    head = (f"# sha256 of the composable_kernel files fa_ck's build reads, at commit {CK_COMMIT}\n"
            f"# (the submodule's pin). Verified by tools/ck_pin.py; rewrite with --write when the pin moves.\n")
    path.write_text(head + "".join(f"{sha256(ck / f)}  {f}\n" for f in files))
    return len(files)


def verify(ck: Path, entries: dict[str, str] | None = None, source: str = "CK_DIR") -> int:
    """Raise CKPinMismatch naming the tree and its files unlike the pin; return how many were checked."""
    entries = read_manifest() if entries is None else entries
    missing = [f for f in entries if not (ck / f).is_file()]
    changed = [f for f in entries if f not in missing and sha256(ck / f) != entries[f]]
    if missing or changed:
        shown = [f"changed: {f}" for f in changed[:5]] + [f"missing: {f}" for f in missing[:5]]
        raise CKPinMismatch(
            f"the CK tree {ck} ({source}) is not composable_kernel at the pinned commit {CK_COMMIT[:12]}: "
            f"{len(changed)} file(s) differ, {len(missing)} missing ({'; '.join(shown)}). Point CK_DIR at a "
            f"checkout of {CK_COMMIT} (or unset CK_DIR to use the submodule / the cached wheel).")
    return len(entries)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ck", nargs="?", help="composable_kernel tree (default: as tools/ck_compile_check.py finds it)")
    ap.add_argument("--write", action="store_true", help="rewrite tools/ck_pin.sha256 from the tree")
    args = ap.parse_args(argv)
    if args.ck:
        ck = Path(args.ck).resolve()
    else:
        sys.path.insert(0, str(ROOT / "tools"))
        import ck_compile_check
        ck = ck_compile_check.locate_ck(None)
    if args.write:
        print(f"wrote {write_manifest(ck)} hashes to {MANIFEST}")
        return 0
    try:
        n = verify(ck)
    except CKPinMismatch as e:
        print(f"ck_pin: {e}", file=sys.stderr)
        return 1
    print(f"ck_pin: {ck}: {n} files match {CK_COMMIT[:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
