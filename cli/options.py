"""Options several commands share."""

import click

ENCODERS = ["auto", "openvino", "openvino:bf16", "openvino:f32", "openvino:int8", "ctranslate2", "fork", "stock"]

encoder_option = click.option(
    "--encoder", type=click.Choice(ENCODERS), default="auto", show_default=True,
    help="The engine that encodes the audio (the decoder is always CTranslate2). auto: OpenVINO in bf16 on CPUs "
         "with AMX or AVX512_BF16; elsewhere whichever of OpenVINO and CTranslate2 measured faster on this "
         "machine at each audio length (measured once, about 10 s; `tokenmap calibrate --encoder` measures "
         "again). openvino: OpenVINO at its default precision (openvino:bf16|f32|int8 to choose). ctranslate2: "
         "CTranslate2 int8 as faster-whisper encodes (stock CTranslate2 in a worker process when `make "
         "stock-encoder` installed it, else the fork: 'stock' and 'fork' name one). `tokenmap doctor` shows "
         "the choice.")
