"""Options several commands share."""

import click

from tokenmap.encoders.choice import ENCODERS

encoder_option = click.option(
    "--encoder", type=click.Choice(ENCODERS), default="auto", show_default=True,
    help="The engine that encodes the audio (the decoder is always CTranslate2). auto: whichever of CTranslate2 "
         "and the OpenVINO precisions this CPU runs measured fastest here at each audio length: f32, int8 "
         "weights, bf16 (AMX or AVX512_BF16). Measured once, about 10 s; `tokenmap calibrate --encoder` "
         "measures again. openvino: OpenVINO at its fastest measured precision (openvino:bf16|f32|int8 to "
         "force one). openvino:int8-full (weights and activations; AVX512_VNNI, AVX-VNNI or AMX; built once, "
         "about a minute) is the fastest where the CPU has int8 units, but its transcripts are worse (about "
         "1.5 WER points on real speech), so only naming it runs it. ctranslate2: "
         "CTranslate2 int8 as faster-whisper encodes (stock CTranslate2 in a worker process when `make "
         "stock-encoder` installed it, else the fork: 'stock' and 'fork' name one). `tokenmap doctor` shows "
         "the choice.")
