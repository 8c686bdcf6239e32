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


def test_a_long_operator_chain_breaks_one_operand_a_line():
    wrapped = _same_code_within("distances = first_sum_of_squares + second_sum_of_squares - 2 * "
                                "products_of_the_two(flattened, codes)\n")
    assert [line.strip()[:1] for line in wrapped.splitlines()[1:-1]] == ["f", "+", "-"]


def test_operator_chains_keep_their_meaning_when_broken():
    """Operands that bind no tighter than the chain (a subtraction on the right, a conditional) keep their
    parentheses: random chains of every operator compare equal as syntax trees after wrapping."""
    import random

    rng = random.Random(0)
    operands = ["first_operand_value", "-negated_operand", "(a if condition_holds else b)", "call_of(x, y)",
                "(left_part - right_part)"]
    for _ in range(300):
        text = rng.choice(operands)
        for _ in range(rng.randint(2, 6)):
            op, other = rng.choice(["+", "-", "*", "/", "@", "**", "%", "//"]), rng.choice(operands)
            text = f"({text}) {op} {other}" if rng.random() < 0.3 else f"{text} {op} {other}"
        _same_code_within(f"value = {text}\n", width=50)


def test_a_long_conditional_breaks_one_part_a_line():
    """Parts that bind as loosely as the conditional (a nested one, a lambda) keep their parentheses."""
    wrapped = _same_code_within("decoded = products_of(output, weights) + bias_of_the_layer if tied_flag_value "
                                "else the_layer_itself(output)\n")
    assert [line.strip().split(" ")[0] for line in wrapped.splitlines()[1:-1]] == ["products_of(output,", "if",
                                                                                    "else"]
    for text in ["(a_value if a_condition else b_value) if (lambda q: q)(second_condition) else other_value_x",
                 "first_long_value if first_long_condition else second_long_value if second_cond else last_one",
                 "(lambda value: value + one_more_term) if the_condition_holds else (lambda value: value)"]:
        _same_code_within(f"result = {text}\n", width=50)
