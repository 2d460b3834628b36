"""Check lesson files against the controls of the built app and their claims against the real models:
`python -m explorer.lessons check FILE...` and `app.py --lesson FILE` (settings only: claims load models). It sits
above explorer.ui because it builds the app when nobody has."""
import sys
from pathlib import Path

from explorer.teaching import view_params
from explorer.teaching.lessons import LessonError, Validate, read_lesson

USAGE = "usage: python -m explorer.lessons check [--settings-only] FILE..."


def app_validator() -> Validate:
    """The validator of the app as built (its registered controls), building the app if nobody has."""
    if not view_params.CONTROLS:
        from explorer.ui import build_app
        build_app()
    return view_params.lesson_validator()


def checked_lesson_file(path) -> str:
    """`app.py --lesson FILE`: the file's absolute path once it parses and every setting fits the built app;
    SystemExit with the line-numbered message otherwise."""
    try:
        read_lesson(path, app_validator())
    except LessonError as err:
        raise SystemExit(f"--lesson: {err}") from None
    return str(Path(path).resolve())


def check_file(path, validate: Validate, claims: bool = True) -> bool:
    """Print what is wrong with one lesson file (or that it is fine); -> whether it is."""
    try:
        lesson = read_lesson(path, validate)
    except LessonError as err:
        print(err, file=sys.stderr)
        return False
    n_claims = sum(len(step.claims) for step in lesson.steps)
    if not claims or not n_claims:
        print(f"{path}: ok, {len(lesson.steps)} steps ({lesson.title})" + (", claims not measured" * bool(n_claims)))
        return True
    from explorer.lesson_check import lesson_claims  # loads torch and the models

    failed = [result for result in lesson_claims(lesson) if not result.ok]
    for result in failed:
        print(f"{path}: {result.message()}", file=sys.stderr)
    if not failed:
        print(f"{path}: ok, {len(lesson.steps)} steps ({lesson.title}), "
              f"{n_claims} {'claim holds' if n_claims == 1 else 'claims hold'}")
    return not failed


def main(argv=None) -> int:
    """python -m explorer.lessons check [--settings-only] FILE... -> 0 when every file is a valid lesson whose
    claims hold on the real models."""
    argv = sys.argv[1:] if argv is None else argv
    claims = "--settings-only" not in argv
    files = [a for a in argv[1:] if a != "--settings-only"]
    if not argv or argv[0] != "check" or not files:
        print(USAGE, file=sys.stderr)
        return 2
    validate = app_validator()
    results = [check_file(path, validate, claims) for path in files]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
