"""Who may open the teacher page: the holder of the key printed at start-up (`--teacher-key`, or generated).

`/teacher?key=KEY` checks the key (constant-time) and sets a cookie holding a keyed digest of it (HttpOnly,
SameSite=Strict: another site's page cannot make the teacher's browser send it); every teacher route checks that
cookie. Wrong keys from one address are answered more and more slowly (0.25 s doubling to 8 s), and one address
has one attempt at a time (a second one sent before the first is answered is refused unread), so guessing a key of
16 random bytes by trying is hopeless twice over, however many requests are sent in parallel."""
import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from typing import Optional

COOKIE = "te_teacher"
MAX_KEY_CHARS = 200  # a longer "key" is refused before it is compared
FIRST_DELAY, MAX_DELAY = 0.25, 8.0  # seconds a wrong key waits: doubled per failure from one address
FAILURES_FORGOTTEN = 600.0  # an address that stops guessing is forgiven after this many seconds
ADDRESSES_REMEMBERED = 1024
ATTEMPTS_AT_ONCE = 64  # key attempts being answered at once, from every address together


def new_key() -> str:
    return secrets.token_urlsafe(16)


class TeacherGate:
    def __init__(self, key: Optional[str] = None):
        self.key = key or new_key()
        self.cookie_value = hmac.new(self.key.encode(), b"transformer-explorer teacher", hashlib.sha256).hexdigest()
        self._failures: "OrderedDict[str, tuple[int, float]]" = OrderedDict()  # address -> (count, last time)
        self._attempting: set[str] = set()  # addresses with a key attempt not answered yet
        self._lock = threading.Lock()

    def key_matches(self, given) -> bool:
        if not isinstance(given, str) or not given or len(given) > MAX_KEY_CHARS:
            return False
        return hmac.compare_digest(given.encode(), self.key.encode())

    def cookie_matches(self, cookie) -> bool:
        if not isinstance(cookie, str) or len(cookie) != len(self.cookie_value):
            return False
        return hmac.compare_digest(cookie.encode(), self.cookie_value.encode())

    def delay_after_failure(self, address: str, now: Optional[float] = None) -> float:
        """Count a wrong key from address; -> seconds to wait before answering it."""
        now = time.monotonic() if now is None else now
        with self._lock:
            count, last = self._failures.pop(address, (0, now))
            count = 1 if now - last > FAILURES_FORGOTTEN else count + 1
            self._failures[address] = (count, now)
            while len(self._failures) > ADDRESSES_REMEMBERED:
                self._failures.popitem(last=False)
        return min(MAX_DELAY, FIRST_DELAY * 2 ** (count - 1))

    def begin_attempt(self, address: str) -> bool:
        """May address try a key now? False while its previous attempt is still being answered (or too many
        addresses are trying at once); end_attempt(address) once it is answered."""
        with self._lock:
            if address in self._attempting or len(self._attempting) >= ATTEMPTS_AT_ONCE:
                return False
            self._attempting.add(address)
            return True

    def end_attempt(self, address: str) -> None:
        with self._lock:
            self._attempting.discard(address)

    def forgive(self, address: str) -> None:
        with self._lock:
            self._failures.pop(address, None)
