/**
 * A value made on first use and shared by every caller after. A failed making is forgotten, so the
 * next caller tries again instead of inheriting the failure for the life of the process.
 */
export function lazily<T>(make: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => {
    if (!value) {
      const made = make();
      value = made;
      made.catch(() => {
        if (value === made) value = undefined;
      });
    }
    return value;
  };
}
