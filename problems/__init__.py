"""The catalog of problems, installed as `t2t_keras.problems`.

Every module is imported here by name; an import error is never swallowed.
"""
