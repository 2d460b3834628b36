"""Names in the room are unique: the teacher page must tell every student apart, and nobody may pass for the
teacher or for a classmate. Names are compared as a reader sees them (Unicode NFKC, case, invisible characters
and spacing ignored); a name already taken gets a suffix, "Ana (2)"."""
import threading
import unicodedata

from explorer.classroom.roster import NAME_CHARS
from explorer.common.errors import UserError

TEACHER_ROW = "you (the teacher)"  # how the teacher page lists the teacher's own session
NO_NAME = "(no name)"  # how it lists a session without a name: "(no name) #1a2b3c4d"
LOCK = threading.Lock()  # held while a name is chosen, so two students cannot take the same one at once


def name_key(name: str) -> str:
    """What two names that read the same have in common."""
    text = unicodedata.normalize("NFKC", name)
    text = "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Mn"))
    return " ".join(text.casefold().split())


def unique_name(wanted: str, taken) -> str:
    """wanted, or wanted with the first free suffix " (2)", " (3)", ... when a name in taken reads the same;
    UserError for the names the teacher page uses for its own rows."""
    key = name_key(wanted)
    if not key:
        return ""
    if key == name_key(TEACHER_ROW) or "(the teacher)" in key or key.startswith(NO_NAME):
        raise UserError(f"“{wanted}” is how the teacher page marks its own rows: type your own name.")
    keys = {name_key(t) for t in taken if t}
    name, n = wanted, 1
    while name_key(name) in keys:
        n += 1
        suffix = f" ({n})"
        name = wanted[:NAME_CHARS - len(suffix)] + suffix
    return name
