"""The registry: names, refusals, look-ups, --t2t_usr_dir imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from t2t_keras import registry
from t2t_keras.data import Problem, Text2TextProblem
from t2t_keras.hparam import HParams
from t2t_keras.models import TransformerHParams


class TranslateEndeNewsBpe8k(Problem):
    """A problem class named the way tensor2tensor names them."""


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("TranslateEndeNewsBpe8k", "translate_ende_news_bpe8k"),
        ("TranslateEndeWmt32k", "translate_ende_wmt32k"),
        ("ParsingEnglishPtb16k", "parsing_english_ptb16k"),
        ("HTTPServer", "http_server"),
        ("Copy", "copy"),
        ("transformer_base", "transformer_base"),
        ("transformer_base_V2", "transformer_base_v2"),
    ],
)
def test_default_name_is_snake_case(name: str, expected: str) -> None:
    assert registry.default_name(type(name, (), {})) == expected


def test_register_problem_by_class_name(clean_registry: None) -> None:
    registry.register_problem(TranslateEndeNewsBpe8k)
    problem = registry.problem("translate_ende_news_bpe8k")
    assert isinstance(problem, TranslateEndeNewsBpe8k)
    assert problem.name == "translate_ende_news_bpe8k"
    assert not problem.was_reversed
    assert "translate_ende_news_bpe8k" in registry.list_problems()


def test_register_with_explicit_names(clean_registry: None) -> None:
    @registry.register_problem("my_corpus")
    class Anything(Problem):
        pass

    @registry.register_hparams(name="my_set")
    def some_function() -> TransformerHParams:
        return TransformerHParams(num_heads=4, d_k=128, d_v=128)

    assert registry.problem("my_corpus").name == "my_corpus"
    assert registry.hparams("my_set").num_heads == 4
    assert "anything" not in registry.list_problems()


def test_reversed_problem_swaps_direction(clean_registry: None) -> None:
    registry.register_problem(TranslateEndeNewsBpe8k)
    reversed_problem = registry.problem("translate_ende_news_bpe8k_rev")
    assert isinstance(reversed_problem, TranslateEndeNewsBpe8k)
    assert reversed_problem.was_reversed
    assert reversed_problem.name == "translate_ende_news_bpe8k_rev"


def test_hparams_returns_a_fresh_instance() -> None:
    first, second = registry.hparams("transformer_base"), registry.hparams("transformer_base")
    assert first == second
    assert isinstance(first, HParams)


def test_register_model_needs_a_keras_model(clean_registry: None) -> None:
    keras = pytest.importorskip("keras")

    @registry.register_model
    class TinyModel(keras.Model):
        pass

    assert registry.model("tiny_model") is TinyModel
    with pytest.raises(registry.RegistrationTypeError, match="subclass of keras.Model"):
        registry.register_model(type("NotAModel", (), {}))


@pytest.mark.parametrize(
    ("register", "obj", "message"),
    [
        (registry.register_problem, type("Plain", (), {}), "subclass of t2t_keras.data.Problem"),
        (registry.register_problem, Problem(), "subclass of t2t_keras.data.Problem"),
        (registry.register_hparams, TransformerHParams, "a function that returns an HParams"),
        (registry.register_hparams, lambda size: size, "must take no arguments"),
    ],
)
def test_wrong_kind_is_refused(register, obj, message, clean_registry: None) -> None:
    with pytest.raises(registry.RegistrationTypeError, match=message):
        register(obj)


def test_hparams_function_returning_something_else_fails_on_lookup(clean_registry: None) -> None:
    @registry.register_hparams
    def returns_a_dict() -> dict:
        return {"num_heads": 8}

    with pytest.raises(registry.RegistrationTypeError, match="returned dict"):
        registry.hparams("returns_a_dict")


def test_registering_a_name_twice_raises(clean_registry: None) -> None:
    with pytest.raises(registry.DuplicateNameError, match="'transformer_base' is already"):

        @registry.register_hparams
        def transformer_base() -> TransformerHParams:
            return TransformerHParams()

    registry.register_problem(TranslateEndeNewsBpe8k)
    with pytest.raises(registry.DuplicateNameError, match="hparams.transformer"):
        registry.register_hparams("transformer_big")(lambda: TransformerHParams())
    with pytest.raises(registry.DuplicateNameError):
        registry.register_problem(TranslateEndeNewsBpe8k)


def test_unknown_name_lists_close_matches() -> None:
    with pytest.raises(registry.UnknownNameError) as caught:
        registry.hparams("transformer_bse")
    message = str(caught.value)
    assert "Unknown hparams set 'transformer_bse'" in message
    assert "Did you mean: transformer_base" in message
    assert "--registry_help" in message
    assert "\n" not in message


def test_unknown_name_without_close_matches(clean_registry: None) -> None:
    with pytest.raises(registry.UnknownNameError) as caught:
        registry.problem("zzzzzzzz")
    assert "Did you mean" not in str(caught.value)
    with pytest.raises(registry.UnknownNameError):
        registry.problem("zzzzzzzz_rev")
    with pytest.raises(LookupError):  # Usable as the standard exception too.
        registry.model("transformr")


def test_help_string_lists_every_kind_with_summaries() -> None:
    text = registry.help_string()
    assert text.startswith("Problems (")
    assert "\nModels (" in text and "\nHparams sets (" in text
    for name in registry.list_hparams():
        assert f"  {name} " in text
    assert "The paper's base model" in text


def test_importing_registry_registers_the_catalog() -> None:
    assert {"transformer_base", "transformer_big", "transformer_tiny"} <= set(
        registry.list_hparams()
    )


def test_import_usr_dir_registers_the_users_entries(make_package) -> None:
    package = make_package(
        {
            "__init__.py": "from . import my_problems, my_hparams\n",
            "my_problems.py": """
                from t2t_keras import registry
                from t2t_keras.data import Problem

                @registry.register_problem
                class MyCorpus(Problem):
                    '''Sentences from my own files.'''
            """,
            "my_hparams.py": """
                import dataclasses
                from t2t_keras import registry

                @registry.register_hparams
                def transformer_base_16_heads():
                    '''Base with 16 heads of depth 32.'''
                    base = registry.hparams("transformer_base")
                    return dataclasses.replace(base, num_heads=16, d_k=32, d_v=32)
            """,
        }
    )
    module = registry.import_usr_dir(str(package))
    assert module.__name__ == package.name
    assert registry.problem("my_corpus").name == "my_corpus"
    assert registry.hparams("transformer_base_16_heads").num_heads == 16
    assert "Sentences from my own files." in registry.help_string()
    # A second import of the same directory is a no-op, not a duplicate error.
    assert registry.import_usr_dir(str(package) + "/") is module


def test_usr_dir_missing(tmp_path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(registry.UsrDirError, match=f"{missing}: no such directory"):
        registry.import_usr_dir(str(missing))


def test_usr_dir_is_a_file(tmp_path) -> None:
    single_file = tmp_path / "my_problems.py"
    single_file.write_text("x = 1\n")
    with pytest.raises(registry.UsrDirError, match="is a file, not a directory"):
        registry.import_usr_dir(str(single_file))


def test_usr_dir_without_init(tmp_path) -> None:
    (tmp_path / "not_a_package").mkdir()
    with pytest.raises(registry.UsrDirError, match="has no __init__.py"):
        registry.import_usr_dir(str(tmp_path / "not_a_package"))


def test_usr_dir_with_invalid_package_name(tmp_path) -> None:
    directory = tmp_path / "my-problems"
    directory.mkdir()
    (directory / "__init__.py").write_text("")
    with pytest.raises(registry.UsrDirError, match="not a valid Python package name"):
        registry.import_usr_dir(str(directory))


def test_usr_dir_named_like_a_loaded_module(tmp_path) -> None:
    directory = tmp_path / "json"
    directory.mkdir()
    (directory / "__init__.py").write_text("")
    import json  # noqa: F401  (make sure the name is taken)

    with pytest.raises(registry.UsrDirError, match="its name 'json' is taken by the module at"):
        registry.import_usr_dir(str(directory))


def test_usr_dir_never_shadows_an_installed_module(tmp_path) -> None:
    """`csv` is installed but maybe not imported yet: the user's csv must not replace it."""
    sys.modules.pop("csv", None)
    directory = tmp_path / "csv"
    directory.mkdir()
    (directory / "__init__.py").write_text("")
    with pytest.raises(registry.UsrDirError, match="'csv' is taken by the installed"):
        registry.import_usr_dir(str(directory))
    import csv

    assert hasattr(csv, "reader")


def test_usr_dir_leaves_sys_path_alone(make_package) -> None:
    package = make_package({"__init__.py": "from . import helpers\n", "helpers.py": "X = 1\n"})
    path_before = list(sys.path)
    module = registry.import_usr_dir(str(package))
    assert sys.path == path_before
    assert module.helpers.X == 1


def test_usr_dir_error_without_message_is_still_clear(make_package) -> None:
    package = make_package({"__init__.py": "raise SystemExit\n"})
    with pytest.raises(registry.UsrDirError, match=r"failed with SystemExit: SystemExit\(\)"):
        registry.import_usr_dir(str(package))


def test_usr_dir_import_error_names_path_and_original_error(make_package) -> None:
    package = make_package(
        {
            "__init__.py": "from . import broken\n",
            "broken.py": """
                from t2t_keras import registry
                from t2t_keras.data import Problem

                @registry.register_problem
                class HalfDone(Problem):
                    pass

                import a_module_that_does_not_exist
            """,
        }
    )
    with pytest.raises(registry.UsrDirError) as caught:
        registry.import_usr_dir(str(package))
    message = str(caught.value)
    assert f"--t2t_usr_dir={package}" in message
    assert "ModuleNotFoundError" in message and "a_module_that_does_not_exist" in message
    assert "broken.py, line 9" in message
    assert isinstance(caught.value.__cause__, ModuleNotFoundError)
    # The failed import left nothing behind: no registration, no module.
    assert "half_done" not in registry.list_problems()
    assert package.name not in sys.modules


def test_usr_dir_syntax_error_names_the_line(make_package) -> None:
    package = make_package({"__init__.py": "x = 1\ndef broken(:\n"})
    with pytest.raises(registry.UsrDirError, match=r"SyntaxError.*__init__.py, line 2"):
        registry.import_usr_dir(str(package))


def test_errors_of_a_users_hparams_set_name_the_set_and_line(make_package) -> None:
    package = make_package(
        {
            "__init__.py": """
                import dataclasses
                from t2t_keras import registry

                @registry.register_hparams
                def my_set():
                    return dataclasses.replace(registry.hparams("transformer_base"), dropuot=0.3)
            """
        }
    )
    registry.import_usr_dir(str(package))
    with pytest.raises(registry.RegistryError) as caught:
        registry.hparams("my_set")
    message = str(caught.value)
    assert "Building hparams set 'my_set'" in message and "dropuot" in message
    assert "__init__.py, line 7" in message


def test_errors_of_a_users_problem_constructor_are_wrapped(clean_registry: None) -> None:
    @registry.register_problem
    class NeedsAnArgument(Problem):
        def __init__(self, corpus_path: str) -> None:
            super().__init__()

    with pytest.raises(registry.RegistryError, match="Building problem 'needs_an_argument'"):
        registry.problem("needs_an_argument")


@pytest.mark.parametrize("name", ["Has Space", "", "CamelCase", "1st", "with-dash"])
def test_invalid_names_are_refused(name: str, clean_registry: None) -> None:
    with pytest.raises(registry.RegistrationTypeError, match="names are lowercase letters"):
        registry.register_hparams(name=name)(lambda: TransformerHParams())


def test_a_lambda_needs_an_explicit_name(clean_registry: None) -> None:
    with pytest.raises(registry.RegistrationTypeError, match="'<lambda>'"):
        registry.register_hparams(lambda: TransformerHParams())


def test_usr_dir_registering_a_taken_name(make_package) -> None:
    package = make_package(
        {
            "__init__.py": """
                from t2t_keras import registry
                from t2t_keras.models import TransformerHParams

                @registry.register_hparams
                def transformer_big():
                    return TransformerHParams()
            """
        }
    )
    with pytest.raises(registry.UsrDirError, match="DuplicateNameError.*'transformer_big'"):
        registry.import_usr_dir(str(package))


def test_the_registry_registers_nothing_until_the_catalog_is_loaded() -> None:
    code = (
        "import sys\n"
        "from t2t_keras import registry\n"
        "assert registry.list_problems() == [] and registry.list_hparams() == []\n"
        "assert 'tensorflow' not in sys.modules\n"
        "try:\n"
        "    registry.problem('translate_number_words_en_de')\n"
        "except registry.UnknownNameError as error:\n"
        "    print(error)\n"
        "from t2t_keras import catalog\n"
        "catalog.load()\n"
        "catalog.load()\n"
        "print(registry.problem('translate_number_words_en_de').data_name)\n"
        "print(len(registry.list_models()))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    error, name, models = result.stdout.strip().splitlines()
    assert "no problems are registered yet" in error
    assert "t2t_keras.catalog.load()" in error
    assert name == "translate_number_words_en_de"
    assert models == "1"


def test_registration_sets_the_problems_name(clean_registry: None) -> None:
    class MyOwnCorpus(Text2TextProblem):
        pass

    assert MyOwnCorpus.data_name == "my_own_corpus"  # Unregistered: the class name.
    registry.register_problem("corpus_of_mine")(MyOwnCorpus)
    assert MyOwnCorpus.data_name == "corpus_of_mine"
    assert registry.problem("corpus_of_mine_rev").name == "corpus_of_mine_rev"
    assert registry.problem("corpus_of_mine_rev").data_name == "corpus_of_mine"
    with pytest.raises(registry.DuplicateNameError, match="already registered as problem"):
        registry.register_problem("another_name")(MyOwnCorpus)
