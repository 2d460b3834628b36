"""Check lesson files against the controls of the built app: `python -m explorer.lessons check FILE...` and
`app.py --lesson FILE`. It sits above explorer.ui because it builds the app when nobody has."""
import sys
from pathlib import Path

from explorer.teaching import view_params
from explorer.teaching.lessons import LessonError, Validate, read_lesson


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


def main(argv=None) -> int:
    """python -m explorer.lessons check FILE... -> 0 when every file is a valid lesson."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or argv[0] != "check":
        print("usage: python -m explorer.lessons check FILE...", file=sys.stderr)
        return 2
    validate, failed = app_validator(), 0
    for path in argv[1:]:
        try:
            lesson = read_lesson(path, validate)
            print(f"{path}: ok, {len(lesson.steps)} steps ({lesson.title})")
        except LessonError as err:
            print(err, file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
