"""Run in the Paddle venv by the Paddle runner (and the fixture recorder): a model's outputs as
`paddle.inference` computes them on the CPU, with its default passes.

    python paddle_child.py MODEL PARAMS FEEDS.npz OUT.npz

Some ops of PIR programs have no oneDNN kernel attributes in Paddle 3.3 ("ConvertPirAttribute2RuntimeAttribute
not support"); those models run again without oneDNN, and OUT.npz says so (`__onednn__`).
"""

import sys

import numpy as np
from paddle import inference


def predict(model: str, params: str, feeds: dict, onednn: bool) -> list:
    config = inference.Config(model, params)
    config.disable_gpu()
    config.disable_glog_info()
    if not onednn:
        config.disable_mkldnn()
    predictor = inference.create_predictor(config)
    for name in predictor.get_input_names():
        predictor.get_input_handle(name).copy_from_cpu(np.asarray(feeds[name], order="C"))
    predictor.run()
    return [predictor.get_output_handle(n).copy_to_cpu() for n in predictor.get_output_names()]


if __name__ == "__main__":
    model, params, feeds_file, out_file = sys.argv[1:5]
    with np.load(feeds_file) as given:
        feeds = {k: given[k] for k in given.files}
    try:
        outputs, onednn = predict(model, params, feeds, True), True
    except NotImplementedError as e:
        if "ConvertPirAttribute2RuntimeAttribute" not in str(e):
            raise
        outputs, onednn = predict(model, params, feeds, False), False
    np.savez(out_file, __onednn__=np.array(onednn), **{f"o{i}": o for i, o in enumerate(outputs)})
