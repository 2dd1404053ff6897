"""CLI of device onboarding: ``adapt``, ``evaluate``, ``predict``, ``check`` and ``demo``.

Each command parses its options, calls the Python API (``passport_kit.onboard.adapt``,
``.evaluate``, ``passport_kit.inference.predict``, ``passport_kit.onboard.check``,
``passport_kit.demo``) and prints; no logic lives here.
"""

from __future__ import annotations

import contextlib
import functools
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import typer

from passport_kit.checkpoint import DEFAULT_CHECKPOINT
from passport_kit.cli import verbosity
from passport_kit.cli.progress import Display, on_terminal, progress_display, step_text
from passport_kit.cli.night_lines import night_lines
from passport_kit.cli.options import (COMPUTE, CONTACTS, DATA, EVALUATION, EXIT_INTERRUPTED, FINETUNE, MODEL,
                                      OUTPUT, PROBE, SCORER, PanelledCommand, echo_json, field_options,
                                      notch_frequency, optional_float, options_in_place_of,
                                      renames_option as _renames)
from passport_kit.errors import ConfigError
from passport_kit.inference.options import ContactOptions, OutputOptions, ReadOptions, RunOptions, ScorerFiles
from passport_kit.onboard.recipe import AUTO_ACTS, FINETUNE_ONLY, RecipeOptions, option_flag
from passport_kit.onboard.recipes import ProbeRecipe, describe_selection, get_recipe, near_chance_note, recipe_names
from passport_kit.checkpoint.adapter_metrics import AdapterMetrics, ClassificationMetrics, LadderSelection
from passport_kit.sleep import stager_help
from passport_kit.wording import counted

_RECIPE_HELP = ("; ".join(f"{name}: {get_recipe(name).help}" for name in recipe_names()) + ". Default: finetune if an "
                "option only it uses is given (" + ", ".join("--" + k.replace("_", "-") for k in FINETUNE_ONLY
                                                            if k not in ("dropout", "validation_fraction"))
                + "), else auto; a recipe given with an option it does not use is an error (--recipe auto takes "
                + ", ".join("--" + k.replace("_", "-") for k in AUTO_ACTS) + " for its adapter training).")
_H_FREQ_HELP = ("Band-pass top in Hz (default: dataset.yaml's h_freq, else the checkpoint's, lowered below the "
                "Nyquist frequency of recordings sampled too slowly for it).")
_L_FREQ_HELP = ("Band-pass bottom in Hz (default: dataset.yaml's l_freq, else the checkpoint's 0.3); e.g. 1 where the "
                "recordings' own high-pass filters differ between classes (check reports it).")


def _default_text(key: str) -> str:
    """Return the command-line text of the default of a field that takes 'none' (RecipeOptions', ContactPolicy's)."""
    default = RecipeOptions.model_fields[key].default
    return "none" if default is None else f"{default:g}"


def _option_help(key: str) -> str:
    """Return the --help text of a RecipeOptions field (ContactPolicy's among them), from its description: one
    source for every command; 'none' is how the command line spells None."""
    text = str(RecipeOptions.model_fields[key].description)
    if key in _TAKES_NONE:
        text = text.replace("None:", "'none':")
    return text[0].upper() + text[1:] + "."


def _contact_option(key: str) -> Any:
    """Return predict's typer option of ContactPolicy threshold ``key``: 'bundle' (the adapter's own value) by
    default; --help lists it under "Poor contacts" with adapt's text."""
    return typer.Option("bundle", "--" + key.replace("_", "-"), help=_option_help(key) + " 'bundle' (default): the "
                        "value adapt trained with.", rich_help_panel=CONTACTS)

_PROGRESS_HELP = ("Show a progress bar with the time so far and an estimate (plain lines where the output is not a "
                  "terminal); --no-progress: none.")
_CONFIG_HELP = ("Run file (YAML) of adapt settings, e.g. 'data: ./eesm17' and 'max_steps: 200' (options with '_' for "
                "'-'), or a bundle's adapter.json to repeat its run; options given here override the file. Not the "
                "training recipe: that is --recipe.")

def _given(ctx: typer.Context, parameter: str) -> bool:
    """Return whether the command line gave ``parameter`` (not its default), so it overrides a --config file."""
    source = ctx.get_parameter_source(parameter)  # typer's (vendored click) ParameterSource; compared by name
    return source is not None and source.name != "DEFAULT"


def fit_lines(metrics: AdapterMetrics) -> list[str]:
    """Return the lines that say how a run was trained and selected (the selection in its recipe's words,
    :meth:`~passport_kit.onboard.recipes.Recipe.describe`), and its warnings (adapt's output)."""
    m, record = metrics, metrics.selection
    lines = [f"trained on {counted(len(m.train_subjects), 'subject')} ({counted(m.train_windows, 'window')})"
             + (f", validated on {len(m.validation_subjects)} ({counted(m.validation_windows, 'window')}); "
                f"{m.steps} steps, best at step {m.best_step}" if record is not None and record.stepped else "")]
    if record is not None:
        lines += describe_selection(record, validation=m.validation, verbose=verbosity.level() >= verbosity.VERBOSE)
    lines += [f"warning: {w}" for w in m.warnings]
    return lines


def stager_lines(selection: dict[str, Any]) -> list[str]:
    """Return adapt's account of a stager-first ladder from adapter.json's selection block
    (:meth:`~passport_kit.onboard.recipes.ProbeRecipe.stager_lines` of its record)."""
    return ProbeRecipe().stager_lines(LadderSelection.model_validate(selection))


def ladder_lines(selection: dict[str, Any], *, verbose: bool = False,
                 validation: ClassificationMetrics | None = None) -> list[str]:
    """Return adapt's account of the ladder from adapter.json's selection block
    (:meth:`~passport_kit.onboard.recipes.ProbeRecipe.ladder_lines` of its record)."""
    return ProbeRecipe().ladder_lines(LadderSelection.model_validate(selection), verbose=verbose,
                                      validation=validation)


def recipe_line(cfg: Any) -> str:
    """Return the line that names the recipe a run used and, when options chose it, which ones."""
    given = get_recipe(cfg.recipe).chosen_by(cfg)
    named = ", ".join("--" + k.replace("_", "-") for k in given)
    return f"recipe {cfg.recipe}" + (f" (gradient training: {named} given)" if given else "")


def _uncorrelated(value: str) -> float | None:
    """Return the --mask-uncorrelated-channels correlation, or None for 'none'."""
    return optional_float(value, "--mask-uncorrelated-channels", "a correlation between 0 and 1")


def _mask_threshold(value: str, option: str = "--mask-bad-channels") -> float | None:
    """Return the threshold of a --mask-bad-channels / --distrust-bad-channels option, or None for 'none'."""
    return optional_float(value, option, "a quality score between 0 and 1")


def _distrust_threshold(value: str) -> float | None:
    """Return the --distrust-bad-channels threshold, or None for 'none'."""
    return _mask_threshold(value, "--distrust-bad-channels")


def _bundle_or(value: str, parse: Callable[[str], float | None]) -> float | None | str:
    """Return "bundle" for predict's 'bundle' (the adapter's own value), else ``parse(value)``."""
    return "bundle" if value.strip().lower() == "bundle" else parse(value)


def _notch(value: str) -> float | None:
    """Return the notch frequency in Hz, or None for 'none'."""
    return notch_frequency(value)


def _sweep(value: str | None) -> tuple[int, ...] | None:
    """Return the subject counts of ``--subjects-sweep 1,2,4``."""
    if value is None:
        return None
    try:
        sizes = tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise ConfigError(f"--subjects-sweep takes comma-separated whole numbers like 1,2,4; got {value!r}") from None
    if not sizes or any(n < 1 for n in sizes):
        raise ConfigError(f"--subjects-sweep needs positive subject counts, got {value!r}")
    return tuple(sorted(set(sizes)))


@contextlib.contextmanager
def _step_bar(enabled: bool, description: str, display: Display | None = None) -> Iterator[Any]:
    """Yield a ``progress(step, total, info)`` callback: a bar with elapsed time and estimate on a terminal
    (on ``display`` when given, so that it shares the command's display), plain lines about every tenth of the run
    in a log; disabled (--no-progress, --quiet), one that only says a run resumed."""
    first: list[int] = []

    def resumed(step: int, total: int) -> None:
        # Resuming is news with the bar off too (issue 28): the run does not start over.
        if not first:
            first.append(step)
            if step > 1:
                typer.echo(f"{description}: resuming from step {step - 1} of {total}", err=True)

    if not enabled or not verbosity.shows_progress():  # --no-progress, or --quiet
        yield lambda step, total, info: resumed(step, total)
        return
    if not on_terminal():
        # No terminal (a log file, a job scheduler): no bar is drawn; plain lines, about every tenth of the run.
        shown: list[tuple[Any, ...]] = []

        def log(step: int, total: int, info: dict[str, Any]) -> None:
            resumed(step, total)
            key = (step, total, info.get("stage"), info.get("rung"))
            if shown and shown[-1] == key:
                return  # the same news twice: one line
            stage = f" ({info['stage']})" if info.get("stage") else ""
            ladder = any(k[3] is not None and k[2] == info.get("stage") for k in shown)
            if info.get("rung") is not None:
                # A ladder's rung: its place in the ladder's order, not a step count (issue 58: 'step 0/7 -> 4/7 ->
                # 7/7' where rungs needed no new fit); the ladder line after training names every rung.
                shown.append(key)
                typer.echo(f"{description}{stage}: {step_text(info)} (rung {step + 1} of {total})", err=True)
            elif ladder and step == total:
                shown.append(key)
                typer.echo(f"{description}{stage}: ladder done  {step_text(info)}".rstrip(), err=True)
            elif step and (step == total or step == first[0] or step % max(1, total // 10) == 0):
                shown.append(key)
                typer.echo(f"{description}{stage}: step {step}/{total}  {step_text(info)}".rstrip(), err=True)

        yield log
        return
    with contextlib.ExitStack() as stack:
        shown = display if display is not None else stack.enter_context(progress_display())
        steps = shown.steps(description)

        def update(step: int, total: int, info: dict[str, Any]) -> None:
            resumed(step, total)
            steps(step, total, info)

        yield update


#: The RecipeOptions fields that adapt and evaluate take on the command line, in --help order, with the panel --help
#: lists each under. Type, default and help are the field's (ContactPolicy's for the contact options): written once.
_RECIPE_PANELS = {
    "recipe": MODEL, "context": PROBE, "probe_layer": PROBE, "prior": PROBE, "prior_channels": PROBE,
    "min_effect": PROBE, "train": FINETUNE, "max_steps": FINETUNE,
    "epochs": FINETUNE, "batch_size": COMPUTE, "lr": FINETUNE, "head_lr": FINETUNE, "patience": FINETUNE,
    "balance": FINETUNE, "instance_norm": DATA, "notch_freq": DATA, "corrupt_prob": FINETUNE, "quality_gate": CONTACTS,
    "channel_dropout": FINETUNE, "mask_bad_channels": CONTACTS, "distrust_bad_channels": CONTACTS,
    "mask_uncorrelated_channels": CONTACTS, "device": COMPUTE, "precision": COMPUTE, "threads": COMPUTE,
}
#: Fields whose None a user gives as 'none': their option is text, read by this (one-line errors).
_TAKES_NONE: dict[str, Callable[[str], float | None]] = {
    "notch_freq": lambda v: _notch(v), "mask_bad_channels": lambda v: _mask_threshold(v),
    "distrust_bad_channels": lambda v: _distrust_threshold(v), "mask_uncorrelated_channels": lambda v: _uncorrelated(v),
}


def _recipe_option(key: str) -> tuple[Any, Any]:
    """Return the annotation and the typer option of RecipeOptions field ``key`` (adapt, evaluate).

    A Literal other than the recipe stays text on the command line, so pydantic checks it with a
    one-line error; the recipe is not given by default (options only finetune uses then choose it).
    """
    field, panel = RecipeOptions.model_fields[key], _RECIPE_PANELS[key]
    flag = option_flag(key)
    if key == "recipe":
        choices = Literal[recipe_names()]  # type: ignore[valid-type] - the registry's names, shown as the choices
        return choices | None, typer.Option(None, flag, help=_RECIPE_HELP, rich_help_panel=panel)
    text = _option_help(key) + (" Finetune recipe only." if key in FINETUNE_ONLY and panel != FINETUNE else "")
    if key in _TAKES_NONE:
        return str, typer.Option(_default_text(key), flag, help=text, rich_help_panel=panel)
    annotation = field.annotation
    if typing.get_origin(annotation) is Literal:
        annotation = str
    if bool in (annotation, *typing.get_args(annotation)):
        flag = f"{flag}/--no-{flag[2:]}"
    return annotation, typer.Option(field.default, flag, help=text, rich_help_panel=panel)


#: The band-pass options of adapt and evaluate (their configs' fields, outside RecipeOptions): delivered with the
#: RecipeOptions values (:func:`_recipe_options`), after them in --help.
_BAND_OPTIONS: dict[str, tuple[Any, Any]] = {
    "h_freq": (float | None, typer.Option(None, "--h-freq", help=_H_FREQ_HELP, rich_help_panel=DATA)),
    "l_freq": (float | None, typer.Option(None, "--l-freq", help=_L_FREQ_HELP, rich_help_panel=DATA)),
}


def _recipe_options(*, leave_out: tuple[str, ...] = (),
                    also: dict[str, tuple[Any, Any]] | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Return a decorator that puts the options of _RECIPE_PANELS' fields (but ``leave_out``), then ``also``'s
    (name: annotation and typer option), in the place of a command's ``recipe_options`` parameter, which then receives
    them as one dict of values ('none' read as None where a field takes it)."""
    options = {key: _recipe_option(key) for key in _RECIPE_PANELS if key not in leave_out} | (also or {})

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def read(*args: Any, recipe_options: dict[str, Any], **kwargs: Any) -> Any:
            values = {key: _TAKES_NONE[key](v) if key in _TAKES_NONE else v for key, v in recipe_options.items()}
            return command(*args, recipe_options=values, **kwargs)

        return options_in_place_of("recipe_options", options)(read)

    return decorate


@_recipe_options(also=_BAND_OPTIONS)
def adapt_command(
    ctx: typer.Context,
    montage: str | None = typer.Option(None, "--montage", help="Registered montage name or montage YAML "
                                       "(required unless the --config file gives it).", rich_help_panel=DATA),
    data: Path | None = typer.Option(None, "--data", help="Labeled dataset folder (dataset.yaml, BIDS or "
                                     "discovered; required unless the --config file gives it).",
                                     rich_help_panel=DATA),
    config: Path | None = typer.Option(None, "--config", help=_CONFIG_HELP, rich_help_panel=DATA),
    out: Path | None = typer.Option(None, "--out", help="Adapter bundle folder, new or empty (default runs/<montage>).",
                                    rich_help_panel=OUTPUT),
    checkpoint: str = typer.Option(DEFAULT_CHECKPOINT, "--checkpoint", help="Base checkpoint name or folder.",
                                   rich_help_panel=MODEL),
    subjects: int | None = typer.Option(None, "--subjects", help="Train on this many subjects (seeded draw).",
                                        rich_help_panel=DATA),
    recipe_options: dict[str, Any] = None,  # type: ignore[assignment] - _recipe_options: RecipeOptions and band-pass
    seed: int = typer.Option(0, "--seed", help="Seed of the subject draw (--subjects), the folds and the training.",
                             rich_help_panel=MODEL),
    resume: bool = typer.Option(True, "--resume/--restart", help="Continue an interrupted run in --out.",
                                rich_help_panel=OUTPUT),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a finished bundle in --out trained with other "
                                   "settings (a rerun with the same settings leaves it as it is).",
                                   rich_help_panel=OUTPUT),
    progress: bool = typer.Option(True, "--progress/--no-progress", help=_PROGRESS_HELP, rich_help_panel=OUTPUT),
) -> None:
    """Fit a model on labeled data by --recipe (auto: the textbook first, for sleep a pretrained stager; a richer
    model only where cross-validation shows a clear gain); write an adapter bundle."""
    from passport_kit.signals.quality import quality_line
    from passport_kit.onboard.adapt import adapt, make_config
    from passport_kit.onboard.run_file import adapt_config_from_file

    if config is None:
        for option, value in (("--montage", montage), ("--data", data)):
            if value is None:
                raise ConfigError(f"adapt needs {option} (or a --config run file that gives it)")
        cfg = make_config(montage=montage, data=data, out=out, checkpoint=checkpoint, subjects=subjects,
                          **recipe_options, seed=seed, resume=resume, overwrite=overwrite)
    else:  # the file's settings stand where the command line gave nothing: only options given override it
        cfg = adapt_config_from_file(config, **given_only(ctx, montage=montage, data=data, out=out,
                                                          checkpoint=checkpoint, subjects=subjects, **recipe_options,
                                                          seed=seed, resume=resume, overwrite=overwrite))
    note = prior_licence_note(getattr(cfg, "prior", None))
    if note is not None:
        typer.echo(note, err=True)
    try:
        with _step_bar(progress, "adapt") as bar:
            result = adapt(cfg, progress=bar,
                           progress_quality=lambda summary: verbosity.note(quality_line(summary)))
    except KeyboardInterrupt:
        from passport_kit.onboard.adapt import interrupted_note

        typer.echo(interrupted_note(cfg.out, cfg.montage), err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    m = result.metrics
    typer.echo(recipe_line(cfg))
    typer.echo(result.summary)
    for line in fit_lines(m):
        typer.echo(line)
    contacts = m.poor_contacts
    if contacts is not None and contacts.channel_windows:
        parts = [f"{n} {k}" for k, n in (("masked", contacts.masked), ("distrusted", contacts.distrusted))
                 if n is not None]
        # Window by window: a channel good over its whole recording can still lose contact for a while.
        typer.echo(f"poor contacts in single windows: {', '.join(parts)} of {contacts.channel_windows} "
                   f"channel-windows (--mask-bad-channels, --mask-uncorrelated-channels, --distrust-bad-channels)")
    typer.echo(f"adapter bundle {'left as it was in' if result.reused else 'written to'} {result.bundle}")
    for line in licence_lines(result.bundle):
        typer.echo(line)


def prior_licence_note(prior: str | None) -> str | None:
    """Return the note that ``--prior`` names a stager under a copyleft licence (GSSC: AGPL-3.0), or None."""
    from passport_kit.checkpoint.licences import copyleft, stager_licences

    named = copyleft(stager_licences({"name": prior})) if prior else {}
    if not named:
        return None
    return (f"note: --prior {prior}: {'; '.join(f'{k} is {v}' for k, v in named.items())}, not a passport-kit "
            "dependency: a bundle whose read-out stacks it runs it again in predict, and its licence's terms reach "
            "what you distribute or serve with it (passport-kit itself is MIT)")


def licence_lines(bundle: Path) -> list[str]:
    """Return what adapt prints of a bundle's licences: one line, and a note for a copyleft part (issue 58)."""
    from passport_kit.checkpoint import read_adapter_meta
    from passport_kit.checkpoint.licences import copyleft, licences_line

    licences = read_adapter_meta(bundle).licences
    if not licences:  # a bundle written before licences were recorded, left as it was
        return []
    lines = [f"licences: {licences_line(licences)}"]
    if copyleft(licences):
        lines.append(f"note: this bundle's read-out stacks {', '.join(copyleft(licences))}: predict runs it on every "
                     "night, and its licence's terms reach what you distribute or serve with the bundle")
    return lines


def given_only(ctx: typer.Context, **options: Any) -> dict[str, Any]:
    """Return the ``options`` the command line gave (not left at their default): those override a --config file."""
    return {k: v for k, v in options.items() if _given(ctx, k)}


# evaluate has no --head-lr and --patience (as before the options were generated); EvaluateConfig takes them.
@_recipe_options(leave_out=("head_lr", "patience"), also=_BAND_OPTIONS)
def evaluate_command(
    montage: str = typer.Option(..., "--montage", help="Registered montage name or montage YAML.",
                                rich_help_panel=DATA),
    data: Path = typer.Option(..., "--data", help="Labeled dataset folder.", rich_help_panel=DATA),
    out: Path = typer.Option(..., "--out", help="Report folder.", rich_help_panel=OUTPUT),
    checkpoint: list[str] = typer.Option([DEFAULT_CHECKPOINT], "--checkpoint",
                                         help="Base checkpoint to compare; repeat for several methods.",
                                         rich_help_panel=MODEL),
    protocol: str = typer.Option("loso", "--protocol", help="loso (leave-one-subject-out) or split.",
                                 rich_help_panel=EVALUATION),
    test_subject: list[str] = typer.Option([], "--test-subject", help="Evaluate only these held-out subjects.",
                                           rich_help_panel=EVALUATION),
    subjects_sweep: str | None = typer.Option(None, "--subjects-sweep", help="Training-set sizes, e.g. 1,2,4.",
                                              rich_help_panel=EVALUATION),
    seeds: int = typer.Option(1, "--seeds", help="Fine-tuning seeds per fold.", rich_help_panel=EVALUATION),
    metric: str = typer.Option("kappa", "--metric", help="Table metric: kappa, balanced_accuracy, macro_f1, ...",
                               rich_help_panel=EVALUATION),
    recipe_options: dict[str, Any] = None,  # type: ignore[assignment] - _recipe_options: RecipeOptions and band-pass
    progress: bool = typer.Option(True, "--progress/--no-progress", help=_PROGRESS_HELP, rich_help_panel=OUTPUT),
    as_json: bool = typer.Option(False, "--json", help="Print the scores as JSON instead of the table.",
                                 rich_help_panel=OUTPUT),
) -> None:
    """Evaluate checkpoints subject-wise (LOSO or split); write tables, plots and JSON."""
    from passport_kit.onboard.evaluate import evaluate

    with progress_display(progress) as display, _step_bar(progress, "run", display) as bar:
        folds = display.bar("runs")

        def runs(done: int, total: int, what: str) -> None:
            if display.drawn:  # a terminal: the runs' bar, with the time so far and an estimate of the rest
                folds(done, total, what)
            elif progress:
                verbosity.note(f"[{done + 1 if done < total else total}/{total}] {what}")

        report = evaluate(
            montage=montage, data=data, out=out, checkpoints=tuple(checkpoint), protocol=protocol,
            test_subjects=tuple(test_subject) or None, subjects_sweep=_sweep(subjects_sweep), seeds=seeds,
            metric=metric, **recipe_options, progress=runs, step_progress=bar,
        )
    if as_json:
        echo_json({"metric": report.metric, "summary": report.summary, "per_subject": report.per_subject,
                   "files": report.files})
        return
    print_table(report)
    for line in headline_lines(report.summary):
        typer.echo(line)
    for name, path in report.files.items():
        typer.echo(f"{name}: {path}")


def headline_lines(summary: dict[str, Any]) -> list[str]:
    """Return one line per method of an evaluation ``summary`` with adapt's expected scores: AUROC where the task
    has one (the ranking metric adapt selects by), balanced accuracy and kappa (its decisions), means over subjects."""
    lines = []
    for method, scores in summary.items():
        mean = {k: (scores.get(k) or {}).get("mean") for k in ("auroc", "balanced_accuracy", "kappa")}
        parts = [f"{k.replace('_', ' ')} {v:.3f}" for k, v in mean.items() if v is not None]
        chance = near_chance_note(mean["kappa"])
        lines.append(f"{method}: {', '.join(parts)} (means over held-out subjects)"
                     + (f"; {chance.split(':')[0]}" if chance else ""))
    return lines


def print_table(report: Any) -> None:
    """Print the subjects × methods table of an evaluation report."""
    from rich.console import Console
    from rich.table import Table

    methods = list(report.summary)
    seeds = len({r["seed"] for r in report.rows})
    table = Table(title=f"{report.metric} per held-out subject"
                  + (f" (mean ± SD over {seeds} seeds)" if seeds > 1 else " (one seed)"))
    table.add_column("subject")
    for m in methods:
        table.add_column(m, justify="right")

    def cell(mean: float | None, sd: float | None) -> str:
        return "-" if mean is None else f"{mean:.3f}" + (f" ± {sd:.3f}" if sd else "")

    for row in report.per_subject:
        table.add_row(row["subject"], *[cell(row[m], row[f"{m}_sd"]) for m in methods])
    table.add_row("mean ± SD over subjects", *[
        cell(report.summary[m][report.metric]["mean"], report.summary[m][report.metric]["sd"]) for m in methods])
    Console().print(table)


#: predict's options, one group per option object of the workflow (inference.options), generated from its fields
#: (each option's help is its field's description): each group reaches the command as one dict
#: (:func:`~passport_kit.cli.options.options_in_place_of`); --help lists them by panel.
_PREDICT_OPTIONS: dict[str, dict[str, tuple[Any, Any]]] = {
    "output_options": field_options(OutputOptions, OUTPUT),
    "run_options": field_options(RunOptions, {"base": MODEL, "batch_size": COMPUTE, "device": COMPUTE,
                                              "precision": COMPUTE}, leave_out=("prefetch",)),
    "contact_options": {key: (str, _contact_option(key)) for key in ContactOptions.model_fields},
    "reading_options": field_options(ReadOptions, DATA, spelled={
        "renames": (list[str], "--rename", "MONTAGE_CHANNEL=NAME_IN_FILE")}),
    "scorer_options": field_options(ScorerFiles, SCORER),
}


def _predict_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Return ``command`` with :data:`_PREDICT_OPTIONS`' groups in the place of its ``*_options`` parameters."""
    for parameter, options in reversed(_PREDICT_OPTIONS.items()):
        command = options_in_place_of(parameter, options)(command)
    return command


@_predict_options
def predict_command(
    recordings: list[Path] = typer.Argument(..., help="Recording files or folders of recordings."),
    adapter: Path | None = typer.Option(None, "--adapter", help="Adapter bundle folder written by adapt (required "
                                        "unless --zero-shot).", rich_help_panel=MODEL),
    zero_shot: str | None = typer.Option(None, "--zero-shot", help="Stage sleep with a pretrained stager alone, no "
                                         f"adapter and no labels: {stager_help()}. Needs --montage.",
                                         rich_help_panel=MODEL),
    montage: str | None = typer.Option(None, "--montage", help="With --zero-shot: the registered montage (or "
                                       "montage YAML) of the recordings.", rich_help_panel=MODEL),
    out: Path = typer.Option(Path("predictions"), "--out", help="Output folder (one subfolder per recording).",
                             rich_help_panel=OUTPUT),
    output_options: dict[str, Any] = None,  # type: ignore[assignment] - OutputOptions' fields
    run_options: dict[str, Any] = None,  # type: ignore[assignment] - RunOptions' fields
    contact_options: dict[str, Any] = None,  # type: ignore[assignment] - ContactOptions' fields
    reading_options: dict[str, Any] = None,  # type: ignore[assignment] - ReadOptions' fields
    scorer_options: dict[str, Any] = None,  # type: ignore[assignment] - ScorerFiles' fields
    as_json: bool = typer.Option(False, "--json", help="Print every recording's summary as JSON.",
                                 rich_help_panel=OUTPUT),
) -> None:
    """Predict every window of new recordings with an adapter bundle (or a sleep stager alone); write CSV/TSV/JSON
    and a plot."""
    from passport_kit.inference.predict import PredictionFailures

    _check_adapter_or_stager(adapter, zero_shot, montage)
    failed = None
    with progress_display() as display:
        progress = _recording_bar(display, recordings)
        try:
            results = _predict(recordings, out, adapter, zero_shot, montage, progress=progress, options={
                "output": output_options, "run": run_options, "contacts": contact_options,
                "reading": reading_options, "scorer": scorer_options})
        except PredictionFailures as exc:  # the recordings that worked are reported, then the error (exit 2)
            results, failed = exc.results, exc
    if as_json:
        echo_json({"recordings": [{"recording": r.recording, "windows": r.n_windows,
                                   "folder": r.files["summary"].parent, "summary": r.summary.to_json()}
                                  for r in results],
                   "failed": [] if failed is None else failed.failures})
    else:
        for line in [line for r in results for line in night_lines(r)]:
            typer.echo(line)
        for row in [] if failed is None else failed.failures:
            typer.echo(f"{row['recording']}: FAILED - {row['error']}")
    if failed is not None:
        raise failed


def _check_adapter_or_stager(adapter: Path | None, zero_shot: str | None, montage: str | None) -> None:
    """Raise ConfigError unless predict was given an adapter or a stager (with its montage), not both."""
    if adapter is not None and zero_shot is not None:  # issue 46: this said "give one of them" to one who gave both
        raise ConfigError(f"--adapter and --zero-shot {zero_shot} were both given: an adapter stages with its own "
                          "read-out, --zero-shot with a pretrained stager alone; drop one of them")
    if adapter is None and zero_shot is None:
        raise ConfigError("predict needs --adapter DIR (a bundle from adapt) or --zero-shot yasa with --montage NAME "
                          "(a pretrained sleep stager, no adapter); give one of them")
    if zero_shot is not None and montage is None:
        raise ConfigError("--zero-shot needs --montage: the montage the recordings were made with")


def _recording_bar(display: Display, recordings: list[Path]) -> Callable[[str], None]:
    """Return predict's ``progress``: on a terminal, one bar over the recordings (their count first: folders are
    searched as predict will)."""
    from passport_kit.inference.files import find_recordings

    bar, seen = display.bar("recordings"), []
    total = len(find_recordings(recordings)) if display.drawn else None

    def next_recording(path: str) -> None:
        bar(len(seen), total, Path(path).name)
        seen.append(path)

    return next_recording


def _predict(recordings: list[Path], out: Path, adapter: Path | None, zero_shot: str | None, montage: str | None, *,
             progress: Callable[[str], None], options: dict[str, dict[str, Any]]) -> list[Any]:
    """Return the results of predict (an adapter's) or predict_zero_shot (a stager's) with the option objects built
    from the command line's ``options`` groups."""
    from passport_kit.inference.predict import predict
    from passport_kit.inference.zero_shot import predict_zero_shot

    reading = ReadOptions(**{**options["reading"], "renames": _renames(options["reading"]["renames"])})
    output = OutputOptions(**options["output"])
    scorer = ScorerFiles(labels=options["scorer"]["labels"] or None, label_map=options["scorer"]["label_map"])
    if zero_shot is not None:
        return predict_zero_shot(montage, recordings, out, stager=zero_shot, reading=reading, output=output,
                                 scorer=scorer, progress=progress)
    contacts = ContactOptions(**{key: _bundle_or(value, _CONTACT_READERS[key])
                                 for key, value in options["contacts"].items()})
    return predict(adapter, recordings, out, reading=reading, output=output, contacts=contacts,
                   run=RunOptions(**options["run"]), scorer=scorer, progress=progress)


#: How predict reads each contact threshold's text ('none', a number, or 'bundle': see _bundle_or).
_CONTACT_READERS: dict[str, Callable[[str], float | None]] = {
    "mask_bad_channels": lambda v: _mask_threshold(v), "distrust_bad_channels": lambda v: _distrust_threshold(v),
    "mask_uncorrelated_channels": lambda v: _uncorrelated(v)}


def check_command(
    montage: str = typer.Option(..., "--montage", help="Registered montage name or montage YAML."),
    data: Path = typer.Option(..., "--data", help="Dataset folder."),
    checkpoint: str = typer.Option(DEFAULT_CHECKPOINT, "--checkpoint", help="Base checkpoint name or folder."),
    instance_norm: bool | None = typer.Option(None, "--instance-norm/--no-instance-norm",
                                              help=_option_help("instance_norm")),
    notch: str = typer.Option("50", "--notch", help="Mains frequency to notch (50, 60) or 'none'."),
    h_freq: float | None = typer.Option(None, "--h-freq", help=_H_FREQ_HELP),
    l_freq: float | None = typer.Option(None, "--l-freq", help=_L_FREQ_HELP),
    batch_size: int = typer.Option(8, "--batch-size", help="Windows in the test batch."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Push one real batch through every contract; print a short report before training."""
    from passport_kit.onboard.check import check

    report = check(montage=montage, data=data, checkpoint=checkpoint, instance_norm=instance_norm,
                   notch_freq=_notch(notch), h_freq=h_freq, l_freq=l_freq,
                   batch_size=batch_size)
    if as_json:
        echo_json({"passed": not report.failures,
                   "items": [{"name": i.name, "status": i.status, "detail": i.detail} for i in report.items]})
    else:
        typer.echo(report.render())
    report.raise_for_failures()


def demo_command(
    out: Path = typer.Option(Path("passport-demo"), "--out", help="Folder for the demo's data and results."),
    subjects: int = typer.Option(4, "--subjects", min=3, help="Simulated subjects (the last is held out)."),
    hours: float = typer.Option(2.0, "--hours", min=0.5, max=12.0, help="Hours of sleep per simulated subject."),
    threads: int | None = typer.Option(None, "--threads", help=_option_help("threads")),
) -> None:
    """Simulate ear-EEG sleep, adapt the shipped checkpoint, compare it with the zero-shot stager and band power,
    predict."""
    from passport_kit.demo import run_demo

    with _step_bar(True, "adapting") as bar:  # on a terminal: each run's steps, time so far and an estimate
        run_demo(out=out, n_subjects=subjects, hours=hours, threads=threads, echo=typer.echo, step_progress=bar)


def register(app: typer.Typer) -> None:
    """Add this part's commands to the root app."""
    # PanelledCommand: --help lists the options by their rich_help_panel (Data, Model, ..., Output).
    for name, command in (("adapt", adapt_command), ("evaluate", evaluate_command), ("predict", predict_command),
                          ("check", check_command), ("demo", demo_command)):
        app.command(name, cls=PanelledCommand)(command)
