"""PyTorch's spatial-transformer sampling (`F.affine_grid`, `F.grid_sample`, 2-D, bilinear, zeros outside) as
helper functions over a NumPy-style namespace (`keras.ops`, `jnp`), written with the translations that need
them (see numpy_code.function_helpers). Channels first, as PyTorch's."""

SAMPLING = '''def affine_grid(theta, size, align_corners=False):
    """PyTorch's F.affine_grid (2-D): the grid (N, H, W, 2) of the points the affine maps `theta` (N, 2, 3) take
    each output pixel of `size` (N, C, H, W) to, in [-1, 1] coordinates."""
    height, width = size[-2], size[-1]

    def steps(count):
        return {np}.linspace(-1.0, 1.0, count) * (1.0 if align_corners else (count - 1) / count)
    ys, xs = {np}.meshgrid(steps(height), steps(width), indexing="ij")
    points = {np}.stack([xs, ys, {np}.ones_like(xs)], axis=-1).reshape(1, height * width, 3).astype("float32")
    grid = {ns}.matmul(points, {ns}.swapaxes(theta, 1, 2))
    return {ns}.reshape(grid, (-1, height, width, 2))


def grid_sample(x, grid, align_corners=False):
    """PyTorch's F.grid_sample (2-D, bilinear, zeros outside): x (N, C, H, W) read at the points `grid`
    (N, Ho, Wo, 2) gives in [-1, 1] coordinates, as (N, C, Ho, Wo)."""
    channels, height, width = {ns}.shape(x)[1:]
    rows, cols = {ns}.shape(grid)[1:3]
    gx, gy = grid[..., 0], grid[..., 1]
    if align_corners:
        ix, iy = (gx + 1) / 2 * (width - 1), (gy + 1) / 2 * (height - 1)
    else:
        ix, iy = ((gx + 1) * width - 1) / 2, ((gy + 1) * height - 1) / 2
    x0, y0 = {ns}.floor(ix), {ns}.floor(iy)
    flat = {ns}.reshape(x, (-1, channels, height * width))
    out = 0.0
    for yy, wy in ((y0, y0 + 1 - iy), (y0 + 1, iy - y0)):
        for xx, wx in ((x0, x0 + 1 - ix), (x0 + 1, ix - x0)):
            inside = (xx >= 0) & (xx <= width - 1) & (yy >= 0) & (yy <= height - 1)
            index = {ns}.clip(yy, 0, height - 1) * width + {ns}.clip(xx, 0, width - 1)
            index = {ns}.reshape({cast}(index, "int32"), (-1, 1, rows * cols))
            values = {ns}.take_along_axis(flat, index, axis=2)
            weight = {ns}.where(inside, wx * wy, 0.0)
            out = out + values * {ns}.reshape(weight, (-1, 1, rows * cols))
    return {ns}.reshape(out, (-1, channels, rows, cols))
'''


def sampling_helpers(ns: str, cast: str, definition) -> dict:
    """The two helpers over namespace `ns` (`cast` its cast function), as `definition`s."""
    affine_grid, grid_sample = SAMPLING.format(ns=ns, np="np", cast=cast).split("\n\n\n")
    return {"affine_grid": definition(affine_grid), "grid_sample": definition(grid_sample)}
