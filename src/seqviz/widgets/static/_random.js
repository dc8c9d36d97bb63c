// seqviz's one seeded PRNG (mulberry32), shared by the NextTokenDistribution view's sample button and the live
// runtime's sampling (live_decode.js): Python (`esm` in seqviz/widgets/_common.py) puts this file in the modules of
// the widgets that can run live, and scripts/vendor_js.py in front of the live runtime's module.
// Top-level name: seededRandom.

// Uniform numbers in [0, 1) from a seed (taken as a 32-bit unsigned integer): the same seed gives the same sequence
// on every page load.
function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
