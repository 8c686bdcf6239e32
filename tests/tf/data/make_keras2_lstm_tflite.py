"""Records the fused-LSTM TFLite fixture: a tf.keras (tf_keras 2.21) LSTM -> Bidirectional(LSTM) -> Dense model,
batch 1, as TensorFlow's converter writes it (UNIDIRECTIONAL_SEQUENCE_LSTM kernels whose states are variable
tensors, cell_clip 10). The first LSTM's forget and input gates are held open and its cell input grows with a
positive input, so its cell state passes the clip within the 16 steps.

    pip install --no-deps --target /tmp/tf_keras tf_keras==2.21.0
    PYTHONPATH=/tmp/tf_keras python tests/tf/data/make_keras2_lstm_tflite.py
"""

from pathlib import Path

import numpy as np
import tensorflow as tf
import tf_keras as keras

HERE = Path(__file__).parent
STEPS, FEATURES, UNITS = 16, 3, 4

keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((STEPS, FEATURES), batch_size=1), keras.layers.LSTM(UNITS, return_sequences=True),
                          keras.layers.Bidirectional(keras.layers.LSTM(2)), keras.layers.Dense(2)])
lstm = model.layers[0]
kernel, recurrent, bias = lstm.get_weights()
kernel[:, 2 * UNITS:3 * UNITS] = np.abs(kernel[:, 2 * UNITS:3 * UNITS]) + 1.0  # the cell input: tanh of a positive sum
bias[:2 * UNITS] = 6.0  # input and forget gates open
lstm.set_weights([kernel, recurrent * 0.1, bias])
converter = tf.lite.TFLiteConverter.from_keras_model(model)
(HERE / "keras2_lstm.tflite").write_bytes(converter.convert())
