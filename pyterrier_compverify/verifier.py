"""Trained verifiers: the ``Verifier`` artifact (a trained head, its config, the encoder it expects) and the
rerankers it hands out (``MapVerifier`` for F4, ``MapCNN`` for F3, ``TrainedHeadReranker`` for any head)."""

from __future__ import annotations

import inspect
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import pyterrier as pt
import torch
from torch import nn

from . import rerank
from .artifacts import CorruptArtifactError, build_lock, file_sha256, read_meta, remove_path, verify_sums, write_json
from .encoder import MaxLengthError, TokenEncoder, hub_offline
from .encoder_delta import DELTA_FILE, apply_delta, write_delta
from .rerank import TokenReranker
from .scoring import HEADS, ConditionalPenalty, build_head, head_spec
from .spec import EncoderSpec, IncompatibleEncoderError

META_FILE = "pt_meta.json"
HEAD_FILE = "head.safetensors"
ENCODER_DIR = "encoder"
TEMPORARY_PREFIX = ".verifier-"  # the folder a save writes in, inside the artifact
RETRAIN = "retrain or download the verifier again"


class CorruptVerifierError(CorruptArtifactError):
    """A Verifier folder whose pt_meta.json, head.safetensors or encoder/ is damaged, missing or foreign."""


class Verifier(pt.Artifact):
    """A folder holding a trained verifier: ``pt_meta.json`` (head name and config, the encoder's name,
    fingerprint and max_length, the training config), ``head.safetensors`` and, when the encoder was fine-tuned,
    either ``encoder-delta.safetensors`` (the tensors it changed against the base named in ``base_encoder``, e.g.
    the top layer of a last-layer run) or a full copy in ``encoder/``. Load with ``Verifier(path)`` or
    ``pt.Artifact.load(path)``; share with ``to_hf`` / ``from_hf``; make a reranker with :meth:`reranker`."""

    ARTIFACT_TYPE = "verifier"
    ARTIFACT_FORMAT = "compverify"

    def __init__(self, path: str | os.PathLike):
        super().__init__(Path(path).expanduser())  # "~/verifier" as the shell would read it

    def __repr__(self) -> str:
        return f"Verifier({str(self.path)!r})"

    @property
    def meta(self) -> dict:
        path = Path(self.path) / META_FILE
        if not path.exists():
            raise FileNotFoundError(f"no verifier at {self.path} ({META_FILE} missing)")
        meta = read_meta(Path(self.path), self.ARTIFACT_TYPE, CorruptVerifierError, RETRAIN)
        if not isinstance(meta.get("head"), str) or not isinstance(meta.get("head_config"), dict):
            raise CorruptVerifierError(f"{path} needs a 'head' name and a 'head_config' object: {RETRAIN}")
        if meta["head"] not in HEADS:
            raise CorruptVerifierError(f"{path} names head {meta['head']!r}, not one of {sorted(HEADS)}: {RETRAIN}")
        return meta

    def _package_files(self):
        """``pt.Artifact`` packaging (``to_hf``, ``build_package``): ``pt_meta.json`` and the files its sums list
        (head, encoder or its changes), not what else a training run keeps in the folder (checkpoints with
        optimiser state, the state cache); an artifact from before the sums were recorded: every file, as
        ``pt.Artifact`` packs a folder."""
        sums = self.meta.get("sha256")
        if not sums:
            yield from super()._package_files()
            return
        names = ["pt_meta.json", HEAD_FILE, *sorted(sums)]  # the head too: a folder compacted since lists the delta
        for name in dict.fromkeys(names):
            if (Path(self.path) / name).exists():
                yield name, str(Path(self.path) / name)

    def verify(self) -> None:
        """Re-read ``head.safetensors`` (and the encoder's files) and compare with the sha256 sums recorded when the
        artifact was saved; a changed file raises :class:`CorruptVerifierError` naming it."""
        verify_sums(Path(self.path), self.meta.get("sha256"), CorruptVerifierError, RETRAIN)

    @classmethod
    def save(
        cls,
        path: str | os.PathLike,
        encoder: TokenEncoder,
        head: nn.Module,
        head_name: str,
        *,
        head_config: dict | None = None,
        training: dict | None = None,
        fine_tuned: bool = False,
        base: EncoderSpec | None = None,
    ) -> Verifier:
        """Write the artifact into ``path``, replacing an earlier one: the files are written in a temporary folder
        inside ``path`` (which may hold training checkpoints, so it is not swapped whole), then moved in one by one
        with ``pt_meta.json`` removed first and written last, so a crash leaves no verifier rather than a meta
        naming missing files. The save holds the folder's build lock: a second save meanwhile is refused
        (``BuildBusyError``), saves one after the other replace each other, and the temporary folders of saves that
        were killed are removed (where saves can be locked: POSIX).

        A ``fine_tuned`` encoder is stored as its changes against ``base`` (the encoder before tuning, loaded again
        by its name) where that is under half the parameters; else, or without ``base``, as a full copy."""
        path = Path(path).expanduser()
        path.mkdir(parents=True, exist_ok=True)  # the folder may hold training checkpoints
        with build_lock(path) as locked:  # the whole save: a second one meanwhile is refused
            for left in path.glob(f"{TEMPORARY_PREFIX}*") if locked else ():  # saves that were killed (no one's)
                shutil.rmtree(left, ignore_errors=True)
            tmp = Path(tempfile.mkdtemp(prefix=TEMPORARY_PREFIX, dir=path))
            try:
                cls._write(tmp, encoder, head, head_name, head_config, training, fine_tuned, base)
                # the old meta goes first and the new one comes last: a crash in between leaves no verifier (the
                # run folder's fingerprint then resumes or retrains), never a meta naming files that are not there
                remove_path(path / META_FILE)
                payload = [name for name in (HEAD_FILE, ENCODER_DIR, DELTA_FILE) if (tmp / name).exists()]
                for name in payload:
                    remove_path(path / name)
                    os.replace(tmp / name, path / name)
                os.replace(tmp / META_FILE, path / META_FILE)
                for name in {ENCODER_DIR, DELTA_FILE} - set(payload):  # an earlier artifact's other encoder form
                    remove_path(path / name)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        return cls(path)

    @classmethod
    def _write(cls, tmp: Path, encoder, head, head_name, head_config, training, fine_tuned, base) -> None:
        """The artifact's files in the folder ``tmp``: head, encoder (its delta or a full copy) and meta last."""
        from safetensors.torch import save_file

        save_file({k: v.detach().cpu().contiguous() for k, v in head.state_dict().items()}, tmp / HEAD_FILE)
        delta = fine_tuned and base is not None and write_delta(encoder, base, tmp)
        if fine_tuned and not delta:
            encoder.model.save(str(tmp / ENCODER_DIR))
        meta = {
            "type": cls.ARTIFACT_TYPE,
            "format": cls.ARTIFACT_FORMAT,
            "package_hint": "pyterrier-compverify",
            "head": head_name,
            "head_config": head_config or {"dim": encoder.dim},
            "encoder": encoder.describe(),
            "fine_tuned_encoder": fine_tuned,
            **({"base_encoder": base.to_dict()} if delta else {}),
            "training": training or {},
        }
        encoder_files = (
            [tmp / DELTA_FILE] if delta else sorted(p for p in (tmp / ENCODER_DIR).rglob("*") if p.is_file())
        )
        files = [tmp / HEAD_FILE, *encoder_files]
        meta["sha256"] = {p.relative_to(tmp).as_posix(): file_sha256(p) for p in files}
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2))

    @property
    def default_penalty(self) -> dict | None:
        """The serving form chosen for this verifier on dev data: ``{"beta": .., "tau": ..}`` when rerankers
        should score with MaxSim minus the conditional penalty, ``None`` when with the head's own score."""
        return self.meta.get("serving", {}).get("penalty")

    def set_default_penalty(self, penalty: dict | None, *, selected_on: str = "") -> None:
        """Record the serving form (see :attr:`default_penalty`) in ``pt_meta.json`` (written atomically, under the
        folder's build lock, so a save or compaction meanwhile is refused rather than lost). A penalty that
        :class:`~.scoring.penalty.ConditionalPenalty` would refuse is refused here, before it is recorded."""
        check_penalty(penalty)
        if penalty:
            ConditionalPenalty(nn.Identity(), **penalty)  # its values too (a gate, a reference), as serving builds it
        with build_lock(Path(self.path)):
            meta = self.meta
            meta["serving"] = {"penalty": dict(penalty) if penalty else None, "selected_on": selected_on}
            self._write_meta(meta)

    def _write_meta(self, meta: dict) -> None:
        write_json(Path(self.path) / META_FILE, meta)

    def compact(self, base: str | None = None) -> bool:
        """Replace a full copy of a fine-tuned encoder (``encoder/``) by its changes against ``base`` (default: the
        encoder name it was tuned from), e.g. 88 MB -> 7 MB for a last-layer MiniLM verifier. The full copy is
        deleted only after base + changes are loaded back with its fingerprint. True when compacted; False when
        there is no full copy, or the delta would hold over half the parameters (a warning says why). Runs under
        the folder's build lock, as :meth:`save` does."""
        with build_lock(Path(self.path)):
            return self._compact(base)

    def _compact(self, base: str | None) -> bool:
        meta = self.meta
        folder = Path(self.path)
        if meta.get("base_encoder"):
            remove_path(folder / ENCODER_DIR)  # a copy whose deletion was interrupted
            return False
        if not meta.get("fine_tuned_encoder") or not (folder / ENCODER_DIR).is_dir():
            return False
        encoder = self.load_encoder(device="cpu", dtype="fp32")
        reference = TokenEncoder(base or self.spec.name, max_length=encoder.max_length, device="cpu", dtype="fp32")
        if not write_delta(encoder, reference.spec, folder, reference=reference):
            return False
        expected = encoder.fingerprint
        compacted = {
            **meta,
            "base_encoder": reference.spec.to_dict(),
            "sha256": {k: v for k, v in meta.get("sha256", {}).items() if not k.startswith(f"{ENCODER_DIR}/")}
            | {DELTA_FILE: file_sha256(folder / DELTA_FILE)},
        }
        if apply_delta(reference, folder / DELTA_FILE, reference.spec).fingerprint != expected:  # never, unless
            # the file was changed meanwhile: the full copy stays
            (folder / DELTA_FILE).unlink()
            raise CorruptVerifierError(f"{folder / DELTA_FILE} does not rebuild {folder / ENCODER_DIR}: kept the copy")
        self._write_meta(compacted)
        remove_path(folder / ENCODER_DIR)
        return True

    def load_head(self) -> nn.Module:
        from safetensors.torch import load_file

        meta = self.meta
        weights = Path(self.path) / HEAD_FILE
        self._check_head_shapes(meta, weights)  # before allocating: a crafted head_config cannot cost memory
        head = build_head(meta["head"], **meta["head_config"])
        try:
            head.load_state_dict(load_file(weights))
        except Exception as e:  # safetensors / shape errors: name the file
            raise CorruptVerifierError(f"{weights} cannot be loaded into a {meta['head']} head: {e}") from e
        return head.eval()

    def _check_head_shapes(self, meta: dict, weights: Path) -> None:
        """The head of ``meta`` built on the meta device (no memory) must have the tensors of ``weights``."""
        from safetensors import safe_open

        where = Path(self.path) / META_FILE
        try:
            with torch.device("meta"):
                expected = build_head(meta["head"], **meta["head_config"]).state_dict()
        except (TypeError, ValueError) as e:  # unknown head name, unknown or bad config keys
            raise CorruptVerifierError(f"{where}: head {meta['head']!r} with {meta['head_config']} fails: {e}") from e
        try:
            with safe_open(weights, "pt") as f:
                stored = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118
        except Exception as e:  # missing, truncated, bad header
            raise CorruptVerifierError(f"{weights} cannot be read ({type(e).__name__}: {e}): {RETRAIN}") from e
        for name in sorted(set(stored) | set(expected)):
            shape = tuple(expected[name].shape) if name in expected else None
            if stored.get(name) != shape:
                raise CorruptVerifierError(
                    f"{weights} does not fit the {meta['head']} head of {where}: tensor {name!r} is "
                    f"{stored.get(name)} in the file, {shape} in the head: {RETRAIN}"
                )

    @property
    def spec(self) -> EncoderSpec:
        """The :class:`EncoderSpec` of the encoder this verifier was trained with (or fine-tuned into)."""
        return EncoderSpec.from_dict(self.meta["encoder"])

    def load_encoder(
        self,
        *,
        encoder: TokenEncoder | None = None,
        device=None,
        batch_size: int | None = None,
        max_length: int | None = None,
        dtype: str | None = None,
    ) -> TokenEncoder:
        """The encoder this verifier was trained with (its fine-tuned copy if any), loaded at ``max_length`` tokens
        (None: the length it was trained at) and ``dtype`` (None: the device's default); or a given ``encoder``
        (``max_length`` and ``dtype`` are then not used), which must have the same weights and may have another
        max_length (e.g. 256 for long passages): the head reads maps of any size up to its grid."""
        meta = self.meta
        spec = self.spec
        options = dict(
            max_length=spec.max_length if max_length is None else max_length,
            device=device,
            batch_size=batch_size,
            dtype=dtype,
        )
        if encoder is None and meta.get("base_encoder"):
            encoder = self._tuned_from_base(meta, options)
        elif encoder is None and meta.get("fine_tuned_encoder"):
            source = Path(self.path) / ENCODER_DIR
            try:
                encoder = TokenEncoder(str(source), **options)
            except MaxLengthError:  # a request beyond the model's positions, not a damaged folder
                raise
            except Exception as e:  # missing folder, truncated weights, bad config: name the folder
                raise CorruptVerifierError(
                    f"{source} (the fine-tuned encoder) cannot be loaded ({type(e).__name__}: {e}): {RETRAIN}"
                ) from e
        elif encoder is None:
            encoder = TokenEncoder(spec.name, **options)
        spec.check(encoder.spec, repr(self), same_length=False)
        return encoder

    def _tuned_from_base(self, meta: dict, options: dict) -> TokenEncoder:
        """The fine-tuned encoder rebuilt from the base named in ``meta`` and ``encoder-delta.safetensors``."""
        try:
            base = EncoderSpec.from_dict(meta["base_encoder"])
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptVerifierError(f"{Path(self.path) / META_FILE}: bad 'base_encoder' ({e}): {RETRAIN}") from e
        try:
            encoder = TokenEncoder(base.name, **options)
        except OSError as e:  # e.g. a local base folder moved away; its message names what to give instead
            raise FileNotFoundError(f"{self} keeps its tuned encoder as changes to {base.name!r}: {e}") from e
        try:
            return apply_delta(encoder, Path(self.path) / DELTA_FILE, base)
        except IncompatibleEncoderError:  # the base name now gives other weights: not a damaged folder
            raise
        except Exception as e:  # missing, truncated, foreign tensors
            raise CorruptVerifierError(
                f"{Path(self.path) / DELTA_FILE} (the fine-tuned encoder's changes) cannot be applied to "
                f"{base.name!r} ({type(e).__name__}: {e}): {RETRAIN}"
            ) from e

    def encoder_for(self, encoder: TokenEncoder) -> TokenEncoder:
        """``encoder`` itself when this verifier was trained over it; else the verifier's own encoder (its
        fine-tuned copy, if any) at ``encoder``'s device, batch size, max length and dtype."""
        try:
            return self.load_encoder(encoder=encoder)
        except ValueError:
            return self.load_encoder(
                device=encoder.device, batch_size=encoder.batch_size, max_length=encoder.max_length, dtype=encoder.dtype
            )

    def reranker(self, **kwargs) -> TokenReranker:
        """A PyTerrier reranker scoring with this verifier's head and encoder: ``MapVerifier`` for F4, ``MapCNN`` for
        F3, ``WeightedMaxSim`` for F1w, a :class:`TrainedHeadReranker` for any other learned head, and for a
        weight-free head trained end-to-end the named reranker of that head (``MaxSim``, ``PooledCosine``, ...) over
        the fine-tuned encoder, with the head's saved options (F2's ``lam`` and ``tau``). ``kwargs`` as for the
        reranker (``store=``, ``device=``, ``penalty=`` for learned heads)."""
        spec = head_spec(self.meta["head"])
        if spec.learned:
            return LEARNED_RERANKERS[spec.reranker](self, **kwargs)  # the class the head's registry entry names
        encoder = self.load_encoder(encoder=kwargs.pop("encoder", None), device=kwargs.get("device"))
        options = {k: v for k, v in self.meta["head_config"].items() if k != "dim"}  # e.g. F2's lam and tau
        return getattr(rerank, spec.reranker)(encoder, **{**options, **kwargs})


class TrainedHeadReranker(TokenReranker):
    """A reranker with the trained head of a :class:`Verifier` artifact (a folder, or the packaged default).

    ``penalty``, e.g. ``{"beta": 0.5, "tau": 0.9}``, scores with MaxSim minus the conditional penalty
    beta * sigmoid(20 (MaxSim - tau)) * (1 - v) instead of the verifier's own score v. ``None`` (default) takes
    the serving form recorded in the artifact (``Verifier.default_penalty``); ``False`` forces the head's score.
    The ``penalty`` attribute is the form in use: a dict, or ``False`` for the head's score.
    """

    FIXED_OPTIONS = ("head",)  # the verifier's head

    def __init__(
        self,
        verifier: Verifier | str | os.PathLike | None = None,
        *,
        encoder: TokenEncoder | None = None,
        device=None,
        penalty: dict | bool | None = None,
        **kwargs,
    ):
        if verifier is None:
            if self.HEAD is None:
                raise ValueError("TrainedHeadReranker needs a verifier (an artifact folder or Verifier)")
            verifier = default_verifier_path(self.HEAD)
        self.verifier = verifier if isinstance(verifier, Verifier) else Verifier(verifier)
        head_name = self.verifier.meta["head"]
        if self.HEAD is not None and head_name != self.HEAD:
            raise ValueError(f"{self.verifier} holds a {head_name} head, not {self.HEAD}")
        if "head" in kwargs:
            raise ValueError(f"{type(self).__name__} serves the verifier's own head: for another, pass its folder")
        if penalty is None:
            penalty = self.verifier.default_penalty
        check_penalty(penalty)
        self.penalty = dict(penalty) if penalty else False  # False (also 0), not None: None means the default
        head = self.verifier.load_head()
        head = ConditionalPenalty(head, **self.penalty) if self.penalty else head
        encoder = self.verifier.load_encoder(encoder=encoder, device=device)
        super().__init__(encoder, head=head, device=device, **kwargs)

    @classmethod
    def from_pretrained(cls, name_or_path: str, **kwargs):
        """A local artifact folder, or ``hf:org/repo`` / a Hugging Face repo id shared with ``Verifier.to_hf``."""
        if os.path.isdir(os.path.expanduser(name_or_path)):
            return cls(Verifier(name_or_path), **kwargs)
        repo = name_or_path.removeprefix("hf:")
        looks_local = os.path.isabs(repo) or repo.startswith((".", "~")) or repo.count("/") != 1
        offline = hub_offline()
        if looks_local or (repo == name_or_path and offline):
            hint = "" if looks_local else f" (and {offline} rules out the hub; 'hf:org/name' reads the hub anyway)"
            raise FileNotFoundError(f"no verifier folder at {name_or_path!r}: the folder does not exist{hint}")
        try:
            verifier = Verifier.from_hf(repo)
        except OSError as error:  # urllib's URLError offline or on a bad name: one line, not twenty frames
            reason = getattr(error, "reason", None) or error
            raise FileNotFoundError(
                f"cannot fetch the verifier {repo!r} from the Hugging Face hub ({reason}): check the network and the "
                "repo id, or give a local folder"
            ) from error
        return cls(verifier, **kwargs)

    def _head_key(self) -> tuple:
        """The artifact's folder and the serving form: two rerankers of one verifier load the same weights."""
        return (str(Path(self.verifier.path).resolve()), repr(self.penalty))

    def __repr__(self) -> str:
        penalty = f", penalty={self.penalty}" if self.penalty else ""
        trained = self.verifier.spec.max_length  # shown when served at another length: another system's name
        length = "" if self.encoder.max_length == trained else f", max_length={self.encoder.max_length}"
        return f"{type(self).__name__}({self.verifier!r}{self._source_repr()}{penalty}{length}{self._dtype_repr()})"


def check_penalty(penalty) -> None:
    """A ValueError naming the options unless ``penalty`` is None, False or a mapping of ConditionalPenalty's
    options (``True`` or a misspelt key gave a raw TypeError)."""
    options = [p for p in inspect.signature(ConditionalPenalty.__init__).parameters if p not in ("self", "verifier")]
    if penalty is None or penalty is False or (isinstance(penalty, (int, float)) and penalty == 0):
        return
    if not isinstance(penalty, Mapping):
        raise ValueError(
            f"penalty must be a dict of {', '.join(options)} (or False, or None: the default), got {penalty!r}"
        )
    unknown = sorted(set(penalty) - set(options))
    if unknown:
        raise ValueError(f"penalty has unknown option(s) {unknown}: the options are {', '.join(options)}")


class MapVerifier(TrainedHeadReranker):
    """F4: a small Transformer over 8x8 patches of the similarity map (the verifier paper). ``MapVerifier()`` loads the
    default weights shipped with the package (a frozen-encoder head over all-MiniLM-L6-v2)."""

    HEAD = "F4"


class MapCNN(TrainedHeadReranker):
    """F3: a CNN over the similarity-map features."""

    HEAD = "F3"


class WeightedMaxSim(TrainedHeadReranker):
    """F1w: MaxSim with learned query-token weights (``scoring.heads.token_weights``): each query token's best
    cosine counts by a weight read from its own state, so "a" or [SEP] counts less than "dog". ``WeightedMaxSim()``
    loads the weights shipped with the package (trained over a frozen all-MiniLM-L6-v2 on Flickr8k train caption
    retrieval; ``experiments/token_weights.py``). From a store it takes MaxSim's fast path (no map), fp32 or int8."""

    HEAD = "F1w"

    def __init__(self, verifier=None, *, penalty: dict | bool | None = None, **kwargs):
        if penalty:  # the penalty reads a verdict from the map alone; F1w needs the query's states too
            raise ValueError(
                "WeightedMaxSim scores with its own weighted MaxSim: a conditional penalty needs a verifier head "
                "(cv.MapVerifier, cv.MapCNN); drop penalty="
            )
        super().__init__(verifier, penalty=False, **kwargs)


LEARNED_RERANKERS = {cls.__name__: cls for cls in (TrainedHeadReranker, MapVerifier, MapCNN, WeightedMaxSim)}


def default_verifier_path(head: str) -> str:
    """The packaged default weights for a head, if this package ships them."""
    from importlib.resources import files

    folder = files("pyterrier_compverify") / "weights" / f"{head.lower()}-minilm-frozen"
    if not (folder / "pt_meta.json").is_file():
        raise FileNotFoundError(f"no default {head} weights are shipped with this version; pass a trained Verifier")
    return str(folder)
