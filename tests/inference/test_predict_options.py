"""predict's option objects (issue 37): built once from the CLI's or the Python keywords, each checked when given."""

from __future__ import annotations

from pathlib import Path

import pytest

import passport_kit as pk
from passport_kit.contacts import ContactPolicy
from passport_kit.errors import ConfigError
from passport_kit.inference import predict as prediction
from passport_kit.inference.predict import ContactOptions, OutputOptions, ReadOptions, RunOptions, ScorerFiles


def test_the_keyword_form_builds_each_option_object(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls = []
    monkeypatch.setattr(prediction, "predict", lambda *args, **kwargs: calls.append((args, kwargs)) or [])
    pk.predict("bundle", ["a.edf"], tmp_path, units="uV", h_freq=30.0, amplitude_check=False, batch_size=8,
               prefetch=False, base="b", edf_annotations=True, plot_format="svg", resume=True,
               mask_bad_channels=0.4, distrust_bad_channels=None, labels=["a.csv"], label_map="rk")
    (args, kwargs), = calls
    assert args == ("bundle", ["a.edf"], tmp_path)
    assert kwargs["reading"] == ReadOptions(units="uV", h_freq=30.0, amplitude_check=False)
    assert kwargs["run"] == RunOptions(base="b", batch_size=8, prefetch=False)
    assert kwargs["output"] == OutputOptions(edf_annotations=True, plot_format="svg", resume=True)
    assert kwargs["contacts"] == ContactOptions(mask_bad_channels=0.4, distrust_bad_channels=None)
    assert kwargs["scorer"] == ScorerFiles(labels=[Path("a.csv")], label_map="rk")


@pytest.mark.parametrize(("build", "message"), [
    (lambda: ContactOptions(mask_bad_channels=1.5), "--mask-bad-channels takes a quality score between 0 and 1"),
    (lambda: ContactOptions(mask_uncorrelated_channels=0.0), "--mask-uncorrelated-channels takes a correlation"),
    (lambda: RunOptions(batch_size=0), r"batch_size \(--batch-size\) must be at least 1, got 0"),
    (lambda: OutputOptions(plot_format="jpg"), r"plot_format \(--plot-format\) must be one of png, svg, pdf"),
])
def test_an_option_out_of_range_is_one_line_when_given(build, message: str) -> None:  # noqa: ANN001
    with pytest.raises(ConfigError, match=message):
        build()


@pytest.mark.parametrize(("given", "reads_activity", "expected"), [
    (ContactOptions(), True, ContactPolicy(mask_bad_channels=0.3, distrust_bad_channels=0.5,
                                           mask_uncorrelated_channels=None)),
    (ContactOptions(mask_bad_channels=None, mask_uncorrelated_channels=0.2), True,
     ContactPolicy(mask_bad_channels=None, distrust_bad_channels=0.5, mask_uncorrelated_channels=0.2)),
    (ContactOptions(), False, ContactPolicy(mask_bad_channels=0.3, distrust_bad_channels=None,
                                            mask_uncorrelated_channels=None)),
])
def test_contact_options_keep_the_bundles_thresholds_unless_given(given: ContactOptions, reads_activity: bool,
                                                                  expected: ContactPolicy) -> None:
    training = {"mask_bad_channels": 0.3, "distrust_bad_channels": 0.5}
    assert given.policy(training, adapter="a", reads_activity=reads_activity) == expected


def test_one_label_file_per_recording() -> None:
    files = [Path("a.edf"), Path("b.edf")]
    assert ScorerFiles().of(files) == {}
    assert ScorerFiles(labels=["a.csv", "b.csv"]).of(files) == {files[0]: Path("a.csv"), files[1]: Path("b.csv")}
    with pytest.raises(ConfigError, match=r"2 recording\(s\), 1 label file\(s\)"):
        ScorerFiles(labels=[Path("a.csv")]).of(files)


def test_a_label_map_without_labels_is_refused_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--label-map rk .* but none were given"):
        prediction.predict(tmp_path / "no-bundle", [tmp_path / "x.edf"], tmp_path / "out",
                           scorer=ScorerFiles(label_map="rk"))
    assert not (tmp_path / "out").exists()


def test_the_keyword_form_routes_each_keyword_to_its_option_object(tmp_path: Path) -> None:
    import passport_kit as pk
    from passport_kit.errors import ConfigError
    from passport_kit.inference.predict import RunOptions

    with pytest.raises(ConfigError, match=r"predict\(\) takes no option 'batchsize' \(did you mean 'batch_size'\?\)"):
        pk.predict(tmp_path / "none", tmp_path, batchsize=8)
    # a keyword updates the object given whole, and is validated there, before any file is read
    with pytest.raises(ConfigError, match="batch_size \\(--batch-size\\) must be at least 1, got 0"):
        pk.predict(tmp_path / "none", tmp_path, run=RunOptions(batch_size=8, device="cpu"), batch_size=0)


@pytest.mark.parametrize(("function", "models"), [
    (pk.predict, (ReadOptions, OutputOptions, ContactOptions, RunOptions, ScorerFiles)),
    (pk.predict_zero_shot, (ReadOptions, OutputOptions, ScorerFiles)),
], ids=["predict", "predict_zero_shot"])
def test_the_keyword_forms_signature_lists_each_option_field_with_its_default(function, models) -> None:  # noqa: ANN001
    import inspect

    fields = {name: field.default for model in models for name, field in model.model_fields.items()}
    params = inspect.signature(function).parameters
    keywords = {name: p.default for name, p in params.items() if name in fields}
    assert keywords == fields
    # the option keywords come last, keyword-only, after the named parameters; no **options is shown
    assert list(params)[-len(fields):] == list(fields)
    assert all(params[name].kind is inspect.Parameter.KEYWORD_ONLY for name in fields)
    assert not [p for p in params.values() if p.kind is inspect.Parameter.VAR_KEYWORD]


def test_the_keyword_forms_docstring_describes_each_option() -> None:
    # the unknown-keyword error sends the user to help(passport_kit.predict): each option has its entry there
    models = (ReadOptions, OutputOptions, ContactOptions, RunOptions, ScorerFiles)
    described = {line.split(" : ")[0].strip() for line in pk.predict.__doc__.splitlines() if " : " in line}
    assert {name for model in models for name in model.model_fields} <= described


@pytest.mark.parametrize(("call", "names"), [
    (lambda p: pk.predict(p / "none", p, plot="svg"), ["plot_format", "batch_size", "renames", "label_map"]),
    (lambda p: pk.predict_zero_shot("yasa", p, montage="tuh-standard", batch_size=8), ["units", "plot_format"]),
], ids=["predict", "predict_zero_shot"])
def test_an_unknown_keyword_is_one_line_naming_the_valid_ones(tmp_path: Path, call,  # noqa: ANN001
                                                              names: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        call(tmp_path)
    message = str(caught.value)
    assert "\n" not in message and "takes no option" in message
    assert all(name in message for name in names)
    assert not (tmp_path / "none").exists()



@pytest.mark.parametrize("model", ["ReadOptions", "OutputOptions", "RunOptions", "ScorerFiles", "ContactOptions"])
def test_each_option_is_declared_once_as_a_described_field(model: str) -> None:
    """Issue 60: a predict option is its field; the CLI's help and pk.predict's docstring are generated from its
    description (a new output switch is its field plus its writer)."""
    import inspect

    import passport_kit as pk
    from passport_kit.cli.onboard import predict_command
    from passport_kit.inference import options

    cli = inspect.signature(predict_command).parameters
    doc = " ".join((pk.predict.__doc__ or "").split())
    for name, field in getattr(options, model).model_fields.items():
        assert field.description and " ".join(field.description.split()) in doc, name
        if name == "prefetch":  # the Python API's alone
            continue
        help_text = cli[name].default.help
        assert field.description in help_text if model != "ContactOptions" else help_text, name
