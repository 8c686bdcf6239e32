"""Long lines of written code broken at brackets: the result is the same code, within the width."""

import ast

from tensorbridge.codegen.wrap import wrap_long_lines


def _same_code_within(source: str, width: int = 60) -> str:
    wrapped = wrap_long_lines(source, width)
    assert ast.dump(ast.parse(wrapped)) == ast.dump(ast.parse(source))
    return wrapped


def test_a_dict_indexed_by_a_key_is_broken_inside_the_dict():
    wrapped = _same_code_within("act = {'gelu': layers.Activation('gelu'), 'relu': layers.ReLU(), "
                                "'tanh': layers.Activation('tanh')}[config.hidden_act]\n")
    assert wrapped.splitlines()[-1] == "}[config.hidden_act]"


def test_other_subscripts_stay_valid_code():
    """A tuple of slices unparsed alone gains parentheses, which a subscript must not have."""
    _same_code_within("carried = sequence_of_carried_values[0:first_extent_of_the_slice, 0:second_extent_of_it]\n")
