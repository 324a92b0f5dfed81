mod corpora;
mod quality;
