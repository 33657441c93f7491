"""Errors that a user can cause and fix."""


class UserError(Exception):
    """Bad input from the user: a name, a flag value, a file, an override string.

    The message is one paragraph that says what was wrong and what is accepted.
    The binaries print it without a traceback and exit with status 2.
    """
