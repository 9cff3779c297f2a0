"""The -verify-diagnostics protocol (shardkit.tools.expected), rule by rule against MLIR's
SourceMgrDiagnosticVerifierHandler (mlir/lib/IR/Diagnostics.cpp)."""

from __future__ import annotations

import pytest

from shardkit.dialects.diagnostics import Diagnostic
from shardkit.tools.expected import Verifier


def error(line: int, message: str, severity: str = "error", col: int = 1, notes=()) -> Diagnostic:
    return Diagnostic(severity, message, "f.mlir", line, col, tuple(notes))


def problems(text: str, *diags: Diagnostic, **kwargs) -> list[str]:
    """What the verifier reports for ``diags`` produced on ``text``, as ``line:col: message`` strings."""
    verifier = Verifier(text, "f.mlir", **kwargs)
    for d in diags:
        verifier.process(d)
    return [
        (f"{p.where.line}:{p.where.col}: " if p.where.located else "")
        + p.where.message
        + (f" ~{p.span}" if p.span else "")
        for p in verifier.finish()
    ]


def test_same_line_plus_minus_above_below():
    lines = [
        "op1  // expected-error {{same line}}",  # 1
        "// expected-error @+2 {{two below}}",  # 2
        "// expected-warning @below {{next plain line}}",  # 3
        "op4",  # 4: the next line without a directive
        "op5  // expected-remark @-4 {{four above}}",  # 5
        "op6",  # 6
        "// expected-note @above {{last plain line}}",  # 7: above is line 6
    ]
    text = "\n".join(lines)
    assert (
        problems(
            text,
            error(1, "a same line b"),
            error(4, "two below"),
            error(4, "next plain line", "warning"),
            error(1, "four above", "remark"),
            error(6, "last plain line", "note"),
        )
        == []
    )


def test_below_and_above_skip_directive_lines():
    text = (
        "op1\n// expected-error @above {{x}}\n// expected-error @above {{y}}\n// expected-error @below {{z}}\n"
        "// expected-error @below {{w}}\nop6"
    )
    assert problems(text, error(1, "x"), error(1, "y"), error(6, "z"), error(6, "w")) == []


def test_dangling_below_expects_the_last_line():
    text = "op1\n// expected-error @below {{x}}"
    assert problems(text, error(2, "x")) == []
    assert problems(text) == ['2:4: expected error "x" was not produced ~1']


def test_unknown_location():
    text = "// expected-error @unknown {{lost}}\nop2"
    assert problems(text, Diagnostic("error", "it got lost")) == []
    assert problems(text, error(2, "it got lost")) == [
        "2:1: unexpected error: it got lost",
        'expected error "lost" was not produced',  # at no place: MLIR drops an @unknown directive's location
    ]
    assert problems(text, Diagnostic("warning", "it got lost")) == [
        "'warning' diagnostic emitted when expecting a 'error'",  # at no place either
        'expected error "lost" was not produced',
    ]
    # a diagnostic at no place stays there, even when the tool named its buffer (Diagnostic.renamed)
    assert problems("op1", Diagnostic("warning", "nowhere", "f.mlir")) == ["unexpected warning: nowhere"]
    verifier = Verifier("op1", "f.mlir")
    verifier.process(Diagnostic("warning", "nowhere", "f.mlir"))
    assert [p.where.file for p in verifier.finish()] == [""]


def test_text_is_a_substring_and_runs_to_the_last_braces():
    text = "op1 // expected-error {{a {{b}} c}}"
    assert problems(text, error(1, "xx a {{b}} c yy")) == []
    assert problems(text, error(1, "a b c")) == [
        "1:1: unexpected error: a b c",
        '1:8: expected error "a {{b}} c" was not produced ~9',
    ]


def test_regex_blocks_with_re_suffix():
    text = "op1 // expected-error-re {{dim {{[0-9]+}} of size {{.*}} is not divisible}}"
    assert problems(text, error(1, "arg 0 - dim 12 of size 6 is not divisible by 8")) == []
    assert (
        problems(text, error(1, "dim x of size 6 is not divisible"))[0] == "1:1: unexpected error: "
        "dim x of size 6 is not divisible"
    )
    # Outside the regex blocks, regex characters are literal.
    assert problems("op1 // expected-error-re {{a.b {{c}}}}", error(1, "axb c"))[0].startswith("1:1: unexpected")


@pytest.mark.parametrize(
    "text, message",
    [
        ("op1 // expected-error-re {{a {{[}}}}", "invalid regex: "),
        ("op1 // expected-error-re {{a {{b}}", "found start of regex with no end '}}'"),
    ],
)
def test_bad_regex_is_reported_at_the_directive(text, message):
    found = problems(text, error(1, "a b"))
    assert found[0].startswith(f"1:8: {message}")
    assert found[1] == "1:1: unexpected error: a b"  # the broken directive expects nothing


def test_one_directive_takes_every_identical_diagnostic_on_its_line():
    text = "op1 // expected-error {{same}}"
    assert problems(text, error(1, "same"), error(1, "same"), error(1, "same")) == []
    # Two identical directives: the first takes both diagnostics, the second is never used.
    text = "op1\n// expected-error @above {{same}}\n// expected-error @above {{same}}"
    assert problems(text, error(1, "same"), error(1, "same")) == ['3:4: expected error "same" was not produced ~4']


def test_two_different_errors_on_one_line():
    text = "// expected-error @below {{first}}\n// expected-error @below {{second}}\nop3"
    assert problems(text, error(3, "second"), error(3, "first")) == []
    assert problems(text, error(3, "first")) == ['2:4: expected error "second" was not produced ~6']


def test_notes_are_checked_at_their_own_location():
    text = "op1 // expected-error {{bad}}\nop2 // expected-note {{see here}}"
    diag = error(1, "bad", notes=[error(2, "see here", "note")])
    assert problems(text, diag) == []
    lost = error(1, "bad", notes=[error(1, "see here", "note")])
    assert problems(text, lost) == [
        "1:1: unexpected note: see here",
        '2:8: expected note "see here" was not produced ~8',
    ]


def test_severity_mismatch_is_a_near_miss_at_the_directive():
    text = "op1\n// expected-error @above {{odd}}"
    assert problems(text, error(1, "looks odd", "warning")) == [
        "2:4: 'warning' diagnostic emitted when expecting a 'error'",
        '2:4: expected error "odd" was not produced ~3',
    ]


def test_only_expected_ignores_the_rest():
    text = "op1 // expected-error {{wanted}}"
    assert problems(text, error(1, "wanted"), error(1, "other"), only_expected=True) == []
    assert problems(text, error(1, "other"), only_expected=True) == ['1:8: expected error "wanted" was not produced ~6']


def test_diagnostics_in_another_file_are_unexpected():
    text = "op1 // expected-error {{x}}"
    assert problems(text, Diagnostic("error", "x", "other.py", 1, 1)) == [
        "1:1: unexpected error: x",
        '1:8: expected error "x" was not produced ~1',
    ]


def test_chunk_line_numbers_and_malformed_directives():
    # A chunk starting at line 10 of its file; a directive missing its braces is an ordinary line.
    text = "op10\n// expected-error @above {{x}}\n// expected-error @below x\nop13 // expected-error@+0 {{y}}"
    verifier = Verifier(text, "f.mlir", 10)
    verifier.process(error(10, "x"))
    verifier.process(error(12, "y"))
    assert [p.where.message for p in verifier.finish()] == [
        "unexpected error: y",
        'expected error "y" was not produced',
    ]
