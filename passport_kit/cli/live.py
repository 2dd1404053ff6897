"""``passport-kit stream``: stage an LSL stream live with an adapter bundle (or a sleep stager alone)."""

from __future__ import annotations

from pathlib import Path

import typer

from passport_kit.cli.options import DATA, MODEL, OUTPUT, PanelledCommand, renames_option
from passport_kit.errors import ConfigError


def stream_cmd(
    lsl: str | None = typer.Option(None, "--lsl", help="Name of the LSL stream to stage (e.g. the device's).",
                                   rich_help_panel=DATA),
    source_id: str | None = typer.Option(None, "--source-id", help="Source id of the stream, where names repeat.",
                                         rich_help_panel=DATA),
    replay: Path | None = typer.Option(None, "--replay", help="Play this recording as an LSL stream on this machine "
                                       "and stage it (to try a set-up without the device).", rich_help_panel=DATA),
    speed: float = typer.Option(1.0, "--speed", help="With --replay: times real time.", rich_help_panel=DATA),
    units: str | None = typer.Option(None, "--units", help="Unit of the stream's numbers (V, mV, uV, nV) where it "
                                     "declares none or the wrong one (default: its own, else uV).",
                                     rich_help_panel=DATA),
    rename: list[str] = typer.Option([], "--rename", help="MONTAGE_CHANNEL=NAME_IN_STREAM, once per channel whose "
                                     "name differs.", rich_help_panel=DATA),
    adapter: Path | None = typer.Option(None, "--adapter", help="Adapter bundle folder written by adapt (required "
                                        "unless --zero-shot).", rich_help_panel=MODEL),
    zero_shot: str | None = typer.Option(None, "--zero-shot", help="Stage with a pretrained stager alone (yasa); "
                                         "needs --montage.", rich_help_panel=MODEL),
    montage: str | None = typer.Option(None, "--montage", help="With --zero-shot: the montage of the device.",
                                       rich_help_panel=MODEL),
    look_ahead: int = typer.Option(0, "--look-ahead", help="Epochs after each one its night smoothing may read "
                                   "(each adds 30 s of delay).", rich_help_panel=MODEL),
    history: int | None = typer.Option(None, "--history", help="Epochs of samples each epoch is staged from "
                                       "(default: 40 for read-outs of the night, 4 for one window).",
                                       rich_help_panel=MODEL),
    gap: float = typer.Option(2.0, "--gap", help="Seconds between samples that break the stream (a gap, never "
                              "bridged).", rich_help_panel=DATA),
    end_after: float = typer.Option(60.0, "--end-after", help="Seconds of silence that end the night (or Ctrl-C).",
                                    rich_help_panel=DATA),
    wait: float = typer.Option(10.0, "--wait", help="Seconds to look for the stream before giving up.",
                               rich_help_panel=DATA),
    outlet: bool = typer.Option(True, "--outlet/--no-outlet", help="Publish each epoch's stage and probabilities "
                                "as the LSL stream NAME-stages.", rich_help_panel=OUTPUT),
    out: Path = typer.Option(Path("live"), "--out", help="Output folder: NAME_live.csv grows there; the night report "
                             "is written in NAME/ at the end.", rich_help_panel=OUTPUT),
) -> None:
    """Stage a live LSL stream epoch by epoch (30 s), causally, with an adapter bundle or a sleep stager alone."""
    from passport_kit.inference.options import ReadOptions
    from passport_kit.live import CausalSettings, adapter_scorer, zero_shot_scorer
    from passport_kit.live.stream import LiveOptions, stage_stream

    if (adapter is None) == (zero_shot is None):
        raise ConfigError("stream needs one of --adapter DIR (a bundle from adapt) or --zero-shot yasa with --montage "
                          "NAME")
    if zero_shot is not None and montage is None:
        raise ConfigError("--zero-shot needs --montage: the montage of the device that streams")
    if replay is None and lsl is None and source_id is None:
        raise ConfigError("give the stream to stage: --lsl NAME (or --source-id ID), or --replay FILE to play a "
                          "recording as one")
    for option, value in (("--gap", gap), ("--end-after", end_after), ("--wait", wait), ("--speed", speed)):
        if not value > 0:
            raise ConfigError(f"{option} must be a positive number of seconds, got {value:g}")
    settings = CausalSettings(look_ahead=look_ahead, history=history)
    options = LiveOptions(name=lsl, source_id=source_id, units=units, gap_s=gap, end_after_s=end_after, resolve_s=wait,
                          outlet=outlet)
    reading = ReadOptions(renames=renames_option(rename))
    scorer = (adapter_scorer(adapter, reading) if adapter is not None
              else zero_shot_scorer(montage, zero_shot, reading))
    player = None
    if replay is not None:
        from passport_kit.live.replay import play_file

        name = lsl or f"replay-{replay.stem}"
        player, seconds = play_file(replay, name, speed=speed, reading=reading)
        # The replay declares volts; a file ends for sure; faster than the staging, its samples wait in the inlet.
        options = options.model_copy(update={"name": name, "source_id": None, "units": None,
                                             "end_after_s": min(end_after, 5.0), "buffer_s": int(seconds) + 60})
    result = stage_stream(scorer, out, options=options, settings=settings, progress=typer.echo)
    if player is not None:
        player.join()
    if result.report is None:
        typer.echo(f"no whole epoch was staged; {result.table} has the rows there were")
        return
    live = result.report.summary["staged_live"]
    delay = live["delay_s"]
    typer.echo(f"{len(result.epochs)} epochs staged live, {len(result.gaps)} gap(s); delay from an epoch's last sample "
               f"to its stage: median {delay['median']:.2f} s, 95th percentile {delay['p95']:.2f} s"
               if delay else f"{len(result.epochs)} epochs staged live, {len(result.gaps)} gap(s)")
    typer.echo(f"night report: {result.report.files['summary'].parent}")


def register(app: typer.Typer) -> None:
    """Add ``stream`` to the root app."""
    app.command("stream", cls=PanelledCommand)(stream_cmd)
