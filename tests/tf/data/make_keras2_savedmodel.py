"""Records the Keras 2 SavedModel fixture: a tf.keras (tf_keras 2.21) model trained two epochs with the legacy
Adam, whose slot variables TensorFlow's loader recreates only through `Optimizer.add_slot`, and its outputs.

    pip install --no-deps --target /tmp/tf_keras tf_keras==2.21.0
    PYTHONPATH=/tmp/tf_keras python tests/tf/data/make_keras2_savedmodel.py
"""

from pathlib import Path

import numpy as np
import tf_keras as keras

HERE = Path(__file__).parent

keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.BatchNormalization(), keras.layers.Dense(4)])
model.compile(optimizer=keras.optimizers.legacy.Adam(1e-3), loss="mse")
rng = np.random.default_rng(0)
x = rng.standard_normal((32, 8)).astype(np.float32)
model.fit(x, rng.standard_normal((32, 4)).astype(np.float32), epochs=2, verbose=0)
model.save(HERE / "keras2_legacy_adam", save_format="tf")
np.savez(HERE / "keras2_legacy_adam.npz", x=x[:4], y=model.predict(x[:4], verbose=0))
